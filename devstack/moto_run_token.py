"""EC2's idempotent RunInstances, which moto (5.2) does not play: a repeated ClientToken launches again there.

EC2 answers a RunInstances whose ClientToken it has seen with the first request's reservation, launching nothing,
and refuses the token with other parameters (`IdempotentParameterMismatch`). nodeflow's launch relies on it: a
launch activity retried while its first attempt is still running (its heartbeat timed out under load) sends the
same token, and EC2 makes one instance of the two calls. moto launched a second one, which the simulator then
booted as a Node no NodeClaim accounts for; kube-scheduler put a pod on it (a CI failure of the nomination e2e).
`install()` (idempotent) wraps moto's RunInstances; `devstack.moto_fleet.install` calls it, so both stand-ins do
this, as they already do for CreateFleet.
"""

from __future__ import annotations

import threading
from typing import Any

_MARK = "__nodeflow_run_token__"
_SEEN: dict[tuple[str, str, str], tuple[str, tuple[tuple[str, str], ...]]] = {}  # -> (reservation id, request)
_LOCK = threading.Lock()  # guards _TOKEN_LOCKS
_TOKEN_LOCKS: dict[tuple[str, str, str], threading.Lock] = {}  # one per token: other launches do not wait
_NOT_COMPARED = frozenset({"Action", "Version", "ClientToken"})


def _request(querystring: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """The request's parameters as compared for a repeated token (the token and the API version aside)."""
    return tuple(sorted((k, str(v)) for k, v in querystring.items() if k not in _NOT_COMPARED))


def _idempotent(original: Any) -> Any:
    def run_instances(self: Any) -> Any:
        from moto.core.responses import ActionResult
        from moto.ec2.exceptions import EC2ClientError

        token = self._get_param("ClientToken")
        if not token:
            return original(self)
        key, request = (self.current_account, self.region, str(token)), _request(self.querystring)
        with _LOCK:
            token_lock = _TOKEN_LOCKS.setdefault(key, threading.Lock())
        with token_lock:  # a repeat waits for the first call's answer, as EC2 serializes one token
            seen = _SEEN.get(key)
            if seen is not None:
                if seen[1] != request:
                    raise EC2ClientError("IdempotentParameterMismatch", f"The client token {token} was used "
                                         "with different parameters")
                reservation = self.ec2_backend.reservations.get(seen[0])
                if reservation is not None:
                    return ActionResult(reservation)
            answer = original(self)
            _SEEN[key] = (answer.result.id, request)
            return answer

    setattr(run_instances, _MARK, original)
    return run_instances


def install() -> None:
    """Make moto's RunInstances answer a repeated ClientToken as EC2 does (idempotent)."""
    from moto.ec2.responses.instances import InstanceResponse

    original = getattr(InstanceResponse.run_instances, _MARK, InstanceResponse.run_instances)
    InstanceResponse.run_instances = _idempotent(original)  # type: ignore[method-assign]
