"""moto's query parser told whether any parameter starts with a prefix from the sorted keys, not by a scan.

moto (5.2) parses an EC2 query request by walking the operation's input shape; before each structure (a list
element such as `LaunchTemplateConfigs.1.Overrides.7`, or a nested member such as its `Placement`) it asks
whether any parameter starts with the structure's prefix by iterating every parameter of the request, through
werkzeug's CombinedMultiDict, which rebuilds its key set on each iteration. A CreateFleet with 60 overrides has
~300 parameters and some 600 structures to ask about, so parsing it cost ~20 ms of CPU (~3 ms with this): in
the Karpenter suite's hostname-spreading-xl scale-out the stand-in spent 78% of its request time parsing (py-spy),
which left the simulator's EC2 polls waiting and no Node registered for minutes. EC2 itself parses a request in roughly
constant time.

`install()` keeps each request's keys sorted once and answers the same question by bisection: a key starts with
the prefix exactly when the first key not below the prefix does, so the answer is moto's own. Both stand-ins
install it (`devstack.moto_indexed`, the devstack's; `devstack.moto_fleet`, the tests' shared one), and
`tests/devstack/test_moto_parse.py` checks that requests parse to what moto as shipped parses.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable
from typing import Any


def any_starts_with(sorted_keys: list[str], prefix: str) -> bool:
    """Whether any of `sorted_keys` starts with `prefix`: the smallest key >= prefix is the only candidate."""
    at = bisect_left(sorted_keys, prefix)
    return at < len(sorted_keys) and sorted_keys[at].startswith(prefix)


def sorted_keys(values: Iterable[str]) -> list[str]:
    return sorted(set(values))


def install() -> None:
    """Patch moto's QueryParser in this process (idempotent)."""
    from moto.core.parse import QueryParser

    original_parse = getattr(QueryParser._do_parse, "__wrapped_keys__", QueryParser._do_parse)
    original_recurse = getattr(QueryParser._gonna_recurse, "__wrapped_keys__", QueryParser._gonna_recurse)

    def _do_parse(self: Any, request_dict: dict[str, Any], shape: Any) -> Any:
        values = request_dict["values"]
        self._nodeflow_keys = (values, sorted_keys(values))
        try:
            return original_parse(self, request_dict, shape)
        finally:
            del self._nodeflow_keys

    def _gonna_recurse(self: Any, query_params: Any, prefix: str) -> bool:
        kept = getattr(self, "_nodeflow_keys", None)
        if prefix == "" or kept is None or kept[0] is not query_params:
            return bool(original_recurse(self, query_params, prefix))
        return not any_starts_with(kept[1], prefix)

    _do_parse.__wrapped_keys__ = original_parse  # type: ignore[attr-defined]
    _gonna_recurse.__wrapped_keys__ = original_recurse  # type: ignore[attr-defined]
    QueryParser._do_parse = _do_parse  # type: ignore[method-assign]
    QueryParser._gonna_recurse = _gonna_recurse  # type: ignore[method-assign]
