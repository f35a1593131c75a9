"""Hypothesis strategies shared by the bad-input tests: junk values and mutations of valid documents."""

from __future__ import annotations

import copy
import os
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st


def fuzz_settings(max_examples: int) -> settings:
    """Bounded and reproducible in the normal test run (derandomized: the same examples every time);
    NODEFLOW_FUZZ_EXPLORE=1 draws new examples each run, to hunt for new defects."""
    return settings(max_examples=max_examples, deadline=None, suppress_health_check=[HealthCheck.too_slow],
                    derandomize=os.environ.get("NODEFLOW_FUZZ_EXPLORE") != "1")

# Strings that sit near the edges of the formats nodeflow parses (durations, percentages, quantities, cron).
TRICKY_STRINGS = (
    "", " ", "0", "-1", "10%", "101%", "-5%", "%", "1e999", "NaN", "Never", "720h", "1h30m", "-1h", "5d", "0s",
    "@daily", "@every 5m", "* * * * *", "61 * * * *", "100Gi", "1.5", "500m", "1000000000000000000000000000",
    "a" * 300, "karpenter.sh/nodepool", "In", "NotIn", "Exists", "Gt", "Lt", "On-Demand", "spot", "Empty",
    "Drifted", "Underutilized", "WhenEmpty", "Balanced", "\x00", "é☃", "${HOME}", "null", "true",
)

scalars = st.one_of(
    st.none(), st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(TRICKY_STRINGS),
    st.text(max_size=12),
)

junk = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.sampled_from(("key", "operator", "values", "nodes", "name", "x")),
                                            inner, max_size=3)),
    max_leaves=6,
)


def paths(doc: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path (tuple of keys / indexes) inside a nested dict/list document, the root excluded."""
    out: list[tuple] = []
    if isinstance(doc, dict):
        for k, v in doc.items():
            out.append((*prefix, k))
            out += paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out.append((*prefix, i))
            out += paths(v, (*prefix, i))
    return out


def _set(doc: Any, path: tuple, value: Any, delete: bool) -> None:
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    if delete:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value


@st.composite
def mutated(draw: st.DrawFn, base: dict[str, Any], max_mutations: int = 3) -> dict[str, Any]:
    """`base` with 1..max_mutations fields replaced by junk or deleted."""
    doc = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, max_mutations))):
        candidates = paths(doc)
        if not candidates:
            break
        path = draw(st.sampled_from(candidates))
        _set(doc, path, draw(junk), delete=draw(st.booleans()) and draw(st.booleans()))
    return doc
