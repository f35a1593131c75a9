"""Karpenter's `--min-values-policy` (kubernetes-sigs/karpenter#2299, v1.10.0): what a new node does when its
remaining instance types cannot meet a requirement's `minValues`.

- `Strict` (Karpenter's default): the node is not planned (`NodeClaim.Add` refuses the pod) and a launch whose
  truncated types break `minValues` fails (`Truncate`).
- `BestEffort`: the node is planned with the types that remain, and its NodeClaim's `minValues` are lowered to the
  distinct values those types carry, with the annotation `karpenter.sh/nodeclaim-min-values-relaxed: "true"`
  (`scheduling/nodeclaim.go` `CanAdd`, `scheduler.go`). Consolidation's price filter stays strict, as Karpenter's
  (`RemoveInstanceTypeOptionsByPriceAndMinValues`).

One setting per process (the worker's flag, read once at start; `nodeflow plan --min-values-policy`), as the
default topology spread is. Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from enum import StrEnum
from typing import Any

from planning.scheduling.process_setting import ChoiceSetting

RELAXED_ANNOTATION = "karpenter.sh/nodeclaim-min-values-relaxed"  # Karpenter's NodeClaimMinValuesRelaxedAnnotationKey


class MinValuesPolicy(StrEnum):
    STRICT = "Strict"
    BEST_EFFORT = "BestEffort"


_setting = ChoiceSetting(MinValuesPolicy.STRICT)
configure = _setting.set
configured = _setting.get
min_values_policy = _setting.using  # the policy inside a block (`nodeflow plan --min-values-policy`, tests)
parse = _setting.parse  # the policy a flag names; ValueError naming both otherwise


def relaxing() -> bool:
    return _setting.value is MinValuesPolicy.BEST_EFFORT


def shortfalls(requirements: Sequence[Mapping[str, Any]], values_of: Callable[[str], set[str]]) -> dict[str, int]:
    """{key: distinct values there are} for each requirement whose `minValues` the values (`values_of(key)`, the
    union over a node's remaining types) do not reach; empty when every minValues is met."""
    out: dict[str, int] = {}
    for req in requirements:
        need, key = req.get("minValues"), str(req.get("key") or "")
        if need and key:
            have = len(values_of(key))
            if have < int(need):
                out[key] = have
    return out


def relaxed(requirements: Sequence[Mapping[str, Any]], short: Mapping[str, int]) -> list[dict[str, Any]]:
    """The requirements with each short key's `minValues` lowered to what there is (dropped at 0: nothing to
    count), as Karpenter's BestEffort rewrites the NodeClaim's requirements."""
    out = []
    for req in requirements:
        req = dict(req)
        key = str(req.get("key") or "")
        if key in short and req.get("minValues"):
            if short[key] > 0:
                req["minValues"] = short[key]
            else:
                req.pop("minValues")
        out.append(req)
    return out


def relax_nodeclaim(claim: dict[str, Any], values_of: Callable[[str], set[str]]) -> bool:
    """BestEffort on a NodeClaim about to be created: its requirements' `minValues` lowered to what its types carry
    and the relaxed annotation set. True when anything was lowered (then the annotation is "true")."""
    spec = claim.setdefault("spec", {})
    short = shortfalls(spec.get("requirements") or [], values_of)
    if not short:
        return False
    spec["requirements"] = relaxed(spec.get("requirements") or [], short)
    claim.setdefault("metadata", {}).setdefault("annotations", {})[RELAXED_ANNOTATION] = "true"
    return True
