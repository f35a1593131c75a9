"""moto_server with an indexed tag lookup, for the benchmarks that hold hundreds of instances.

moto (5.2) finds a resource's tags by scanning every tag of every resource; `devstack.moto_tags` answers them
from moto's own per-resource dict instead (the same tags, in the same order), so that a Karpenter-suite run
measures nodeflow, not moto (docs/decisions.md §17).

Run as `python -m devstack.moto_indexed -H 127.0.0.1 -p PORT` (the same arguments as `moto_server`). This is
the devstack's EC2 stand-in: besides the tag index, `main()` installs `devstack.moto_spot` (a spot price history
that varies by type, zone and hour) and `devstack.pricing_api` (the Pricing API's GetProducts,
DescribeServices and GetAttributeValues over the bundled price table), both answered on the same port
(docs/architecture.md, "The EC2 stand-in"), and `devstack.cloud_faults` (a knob the tests turn on to answer
chosen EC2 calls with EC2's errors: throttling, no capacity, refused credentials), and `devstack.moto_fleet`
(instant CreateFleet as EC2 answers it), `devstack.moto_parse` (moto's request parsing without a scan of every
parameter per structure) and `devstack.moto_instances` (moto's instance lookups without a copy of every
reservation). The tests' shared `moto_endpoint` runs moto with `devstack.moto_fleet`, the tag index, the parse
and the instance lookups only, so nodeflow's other calls are checked against moto as shipped;
`tests/devstack/test_moto_indexed.py` checks that both give moto's own tag answers, and the
`cloud_endpoint` fixture runs this module.

It also keeps the rendered answer of the two static catalog calls, DescribeInstanceTypes and
DescribeInstanceTypeOfferings, per account, region and query: moto builds the same 5.8 MB of XML (1,395 types)
from the same static data on every call, which took 4.6 s of a 5.5 s call, once per discovery (the worker's, the
demo's and each test's). The answer is moto's own, rendered once and shared between stand-in processes through a
cache directory (`render_dir()`, keyed by moto's version); `tests/devstack/test_moto_indexed.py` checks that a
kept answer is exactly what moto as shipped answers. Pages of DescribeSpotPriceHistory (devstack.moto_spot, whose
prices are fixed by type, zone and hour) are kept too, in memory only, by query and the hours they cover.
Asked with MaxResults, DescribeInstanceTypes answers in pages as EC2 does (`install_paging`), so that a client's
memory is measured as it would be against EC2.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

from devstack import cloud_faults, moto_fleet, moto_instances, moto_parse, moto_spot, moto_tags, pricing_api
from devstack.kept import Kept
from runtime import startup_gc

STATIC_ACTIONS = frozenset({"DescribeInstanceTypes", "DescribeInstanceTypeOfferings"})
RENDER_FORMAT = 2  # part of every kept answer's key: bump it when this module changes what STATIC_ACTIONS answer
_WINDOW_PARAMS = frozenset({"StartTime", "EndTime"})
HOURLY_PAGES = 64  # spot price history pages kept in memory (~0.3 MB each; a region's history is 4-7 pages)


def _static_key(response: Any) -> tuple[Any, ...] | None:
    """What a static catalog answer depends on (account, region, the query), or None for any other action."""
    action = response._get_action()
    if action not in STATIC_ACTIONS:
        return None
    return response.current_account, response.region, action, _query(response)


def _hourly_key(response: Any) -> tuple[Any, ...] | None:
    """What a spot price history page depends on (devstack.moto_spot: deterministic prices by type, zone and
    hour): the account, region and query, and the hours of the window the answer was computed for, which stand
    for StartTime and EndTime (a client asking from "now" sends a new StartTime each time). None for any other
    action."""
    hours = getattr(response, "spot_window_hours", None)
    if hours is None or response._get_action() != "DescribeSpotPriceHistory":
        return None
    return response.current_account, response.region, _query(response, leaving_out=_WINDOW_PARAMS), hours


def _query(response: Any, leaving_out: frozenset[str] = frozenset()) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """A request's parameters as a key, in a fixed order, without those named."""
    return tuple(sorted((k, tuple(v)) for k, v in response.querystring.items() if k not in leaving_out))


def render_dir() -> Path | None:
    """Where rendered catalog answers are shared between stand-in processes (every test session, demo and bench
    starts its own): $NODEFLOW_MOTO_RENDER_CACHE, else $XDG_CACHE_HOME or ~/.cache under nodeflow/; "" keeps them
    in memory only. The moto version is part of each key, so an upgrade renders afresh."""
    configured = os.environ.get("NODEFLOW_MOTO_RENDER_CACHE")
    if configured is not None:
        return Path(configured) if configured else None
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "nodeflow" / "moto-render"


class RenderStore:
    """Rendered answers by key: in memory, and in `directory` when given (written atomically, read once)."""

    def __init__(self, directory: Path | None, version: str, limit: int | None = None) -> None:
        """`limit`: at most that many answers in memory, the oldest dropped first (None: no bound)."""
        self.directory, self.version = directory, version
        self.memory: Kept[tuple[Any, ...], tuple[int, dict[str, Any], str]] = Kept(limit)

    def _path(self, key: tuple[Any, ...]) -> Path | None:
        if self.directory is None:
            return None
        digest = hashlib.sha256(repr((self.version, key)).encode()).hexdigest()[:32]
        return self.directory / f"{digest}.json"

    def get(self, key: tuple[Any, ...]) -> tuple[int, dict[str, Any], str] | None:
        kept = self.memory.get(key)
        if kept is not None:
            return kept
        path = self._path(key)
        try:
            doc = json.loads(path.read_text(encoding="utf-8")) if path is not None else None
        except (OSError, ValueError):
            return None  # absent or half-written by a process that died: render again
        if doc is None or doc.get("key") != repr((self.version, key)):
            return None
        kept = (int(doc["status"]), dict(doc["headers"]), str(doc["body"]))
        self.memory.put(key, kept)
        return kept

    def put(self, key: tuple[Any, ...], status: int, headers: dict[str, Any], body: str) -> None:
        self.memory.put(key, (status, dict(headers), body))
        path = self._path(key)
        if path is None:
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            doc = {"key": repr((self.version, key)), "status": status, "headers": headers, "body": body}
            tmp.write_text(json.dumps(doc), encoding="utf-8")
            os.replace(tmp, path)
        except OSError:
            pass  # a read-only home: memory only


def install_static_cache(directory: Path | None = None) -> None:
    """Patch moto's EC2 responses in this process to render each static catalog answer once (idempotent), kept in
    memory and in `directory`. Errors are never kept; the request id and date are still set per call (moto's
    `_enrich_response` runs after this)."""
    import moto
    from moto.ec2.responses import EC2Response

    original = getattr(EC2Response.serialized, "__wrapped_render__", EC2Response.serialized)
    version = f"{moto.__version__}/{RENDER_FORMAT}"
    static, hourly = RenderStore(directory, version), RenderStore(None, version, limit=HOURLY_PAGES)

    def serialized(self: Any, action_result: Any) -> Any:
        if isinstance(action_result.result, Exception):
            return original(self, action_result)
        key, store = _static_key(self), static
        if key is None:
            key, store = _hourly_key(self), hourly
        if key is None:
            return original(self, action_result)
        kept = store.get(key)
        if kept is None:
            status, headers, body = original(self, action_result)
            if status != 200 or not isinstance(body, str):
                return status, headers, body
            kept = (status, {k: v for k, v in headers.items() if k not in self.response_headers}, body)
            store.put(key, *kept)
        status, headers, body = kept
        return status, {**headers, **self.response_headers}, body

    serialized.__wrapped_render__ = original  # type: ignore[attr-defined]
    EC2Response.serialized = serialized  # type: ignore[method-assign]


def page(items: list[Any], max_results: int | None, token: str | None) -> tuple[list[Any], str | None]:
    """One page of `items` as EC2 pages DescribeInstanceTypes (MaxResults 5-100, an opaque NextToken), or all of them
    without MaxResults; the token is the next offset."""
    if max_results is None:
        return items, None
    start = int(token) if token and token.isdigit() else 0
    end = start + max(5, min(100, max_results))
    return items[start:end], (str(end) if end < len(items) else None)


def install_paging() -> None:
    """Patch moto's DescribeInstanceTypes to answer in pages when asked with MaxResults, as EC2 does (moto 5.2 always
    answers all 1,395 types at once: 5.8 MB that a client parses in one piece, +44 MiB peak RSS in its process
    against +12 MiB in pages of 100). Idempotent."""
    from moto.core.responses import ActionResult
    from moto.ec2.responses import EC2Response

    if getattr(EC2Response.describe_instance_types, "__paged__", False):
        return

    def describe_instance_types(self: Any) -> Any:
        matches = self.ec2_backend.describe_instance_types(self._get_param("InstanceTypes", []),
                                                          self._filters_from_querystring())
        max_results = self._get_param("MaxResults")
        items, token = page(list(matches), int(max_results) if max_results else None, self._get_param("NextToken"))
        return ActionResult({"InstanceTypes": items, **({"NextToken": token} if token else {})})

    describe_instance_types.__paged__ = True  # type: ignore[attr-defined]
    EC2Response.describe_instance_types = describe_instance_types  # type: ignore[method-assign]


def _exit_now(signum: int, frame: Any) -> None:
    """SIGTERM/SIGINT: leave at once. moto's own handler calls sys.exit, and tearing down moto's in-memory state
    took 3-5 s per stop; the state is meant to vanish with the process (nothing is written to disk)."""
    os._exit(0)


def main(argv: list[str] | None = None) -> None:
    startup_gc.pause()  # moto loads with no cyclic collection (0.75 of 2.1 CPU-s)
    moto_tags.install()
    moto_parse.install()
    moto_instances.install()
    install_static_cache(render_dir())
    install_paging()
    moto_spot.install()
    moto_fleet.install()
    pricing_api.install()
    cloud_faults.install()  # outermost: a refused call reaches neither moto nor the Pricing API
    import moto.server

    moto.server.signal_handler = _exit_now  # main() installs it for SIGTERM and SIGINT
    startup_gc.resume()
    moto.server.main(argv if argv is not None else sys.argv[1:])


if __name__ == "__main__":
    main()
