"""The chaos suite's cloud faults: what EC2 itself answers, from the stand-in's fault knob (devstack/cloud_faults.py).

- Throttling all run long: THROTTLE_RATE of the workers' CreateFleet, RunInstances and TerminateInstances calls
  (the simulator's own DescribeInstances polls and the test's reads are left alone) answer RequestLimitExceeded
  (seeded), and so does the first TerminateInstances after each change of the rules: a count, so the run is sure to
  meet one (a seed once drew none from the rate alone).
- Refused offerings: the first ICE_TIMES RunInstances calls after each change of the rules answer
  InsufficientInstanceCapacity (the pools here have no EC2NodeClass, so a launch is one RunInstances per offering: a
  refused offering is marked unavailable for 3 minutes and the launch takes the next). A count too: the run makes
  five or six launches, too few for a rate to be sure to fire.
- A credential window: TerminateInstances answers UnauthorizedOperation from when it opens until the worker has
  said so in a CloudUnauthorized Event (or WINDOW_LIMIT seconds), as after a rotation an operator then mends. The
  window waits for its effect rather than guessing a length: a window no termination met proves nothing.

The replicas here run every controller each (the test suite turns leader election off, tests/conftest.py): two
writers racing is the harder case for fencing. Leader kills are the soak's (bench/soak_replicas.py) and
tests/runtime/test_leader_workers.py's.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from typing import Any

from chaos.chaos_cluster import retry
from kubernetes import client as k8s

from api.events import EventReason
from devstack.cloud_faults import FaultRule, fault_counts, set_faults

THROTTLE_RATE = 0.1
ICE_TIMES = 2
THROTTLED = ("CreateFleet", "RunInstances", "TerminateInstances")
WINDOW_LIMIT = 150.0  # seconds; up to 78.8 s in loaded runs (load 9-25) before the first Event


class CloudChaos:
    """The stand-in's rules over the run, and what they injected (by error code; the knob zeroes its counts at
    each change, so they are read before it)."""

    def __init__(self, endpoint: str, seed: int) -> None:
        self.endpoint, self.seed = endpoint, seed
        self.injected: Counter[str] = Counter()
        self.window: dict[str, Any] = {}
        self._changes = 0

    def _set(self, refusing: bool) -> None:
        if self._changes:
            self.injected.update(fault_counts(self.endpoint).get("injectedByCode") or {})
        rules = [FaultRule("TerminateInstances", "UnauthorizedOperation")] if refusing else []
        rules += [FaultRule("RunInstances", "InsufficientInstanceCapacity", times=ICE_TIMES),
                  # sure to fire: a termination refused in the window tries again after it (throttled, then through)
                  FaultRule("TerminateInstances", "RequestLimitExceeded", times=1)]
        rules += [FaultRule(a, "RequestLimitExceeded", rate=THROTTLE_RATE) for a in THROTTLED]
        set_faults(self.endpoint, rules, seed=self.seed + self._changes)
        self._changes += 1

    def throttle(self) -> None:
        """Throttling on (after moto's restart, which forgets the rules)."""
        self._set(False)

    async def credential_window(self, api: Any, log: Any) -> None:
        """Refuse TerminateInstances until a CloudUnauthorized Event shows (or WINDOW_LIMIT), then throttle only."""
        await asyncio.to_thread(self._set, True)
        log("credentials revoked: TerminateInstances refused")
        start, said = time.monotonic(), []
        while time.monotonic() - start < WINDOW_LIMIT and not said:
            await asyncio.sleep(0.5)
            said = await asyncio.to_thread(unauthorized_events, api)
        await asyncio.to_thread(self._set, False)
        self.window = {"seconds": round(time.monotonic() - start, 1), "events": said}
        log(f"credentials back after {self.window['seconds']} s (events: {said})")

    def totals(self) -> Counter[str]:
        self.injected.update(fault_counts(self.endpoint).get("injectedByCode") or {})
        self._changes = 0  # read: later reads start again from the knob's counts
        return self.injected


def unauthorized_events(api: Any) -> list[str]:
    """`kind/name` of the objects a CloudUnauthorized Event was written on."""
    events = retry(k8s.CoreV1Api(api).list_event_for_all_namespaces).items
    return sorted(f"{e.involved_object.kind}/{e.involved_object.name}" for e in events
                  if e.reason == EventReason.CLOUD_UNAUTHORIZED.value)
