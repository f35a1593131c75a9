"""How far a new node of a provisioning decision fills: nodeflow's `--fill-policy` (docs/semantics.md §3.7).

Karpenter's scheduler adds the next pod to an in-flight NodeClaim whenever one of its instance types still fits
the pods (`scheduling/nodeclaim.go` `CanAdd`), and the launch takes the cheapest type left. When the types that
fit the grown claim are all of a worse shape for its pods than those that fitted it before (the basic scenario of
Karpenter's suite on the AWS catalog: four 3.5-CPU / 28-GiB pods fill an r5a.4xlarge, the fifth moves the claim to
an f2.6xlarge at 10.6 GiB a CPU), every such claim pays for capacity its pods never use: 93 f2.6xlarge at $184/h
where 125 r5a.4xlarge and 23 m5a.4xlarge hold the same pods at $128/h (docs/benchmarks.md, "Memory utilization in
basic").

- `CostAware` (nodeflow's default): a pod does not join a new node when that raises the node's best price per unit
  of its pods' cpu/memory mix by more than `MAX_UNIT_PRICE_RISE`; it joins the next new node, or opens one. A step
  to the next size of the same family keeps the price per unit, so nodes still grow as Karpenter's do.
- `Greedy`: Karpenter's fill, exactly.

Only provisioning (pending pods, interruption replacements) applies it: a consolidation or drift command's
replacements are as Karpenter plans them. One setting per process (the worker's flag, read once at start;
`nodeflow plan --fill-policy`), as the minValues policy is. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from api.instance_types.labels import CATEGORY
from planning.scheduling.process_setting import ChoiceSetting
from planning.scheduling.type_options import TypeOption, best_unit_price

# A join may raise the node's best price per unit of its pods' mix by 25% at most: sizes of one family are priced
# alike (0%), like shapes of two families apart by 10-15% (r5.4xlarge against r5a.4xlarge: 11.5%), while basic's
# step from r5a.4xlarge to f2.6xlarge costs 46% more per unit. Below it nodes grow as Karpenter's do.
MAX_UNIT_PRICE_RISE = 0.25


class FillPolicy(StrEnum):
    COST_AWARE = "CostAware"
    GREEDY = "Greedy"


_setting = ChoiceSetting(FillPolicy.COST_AWARE)
configure = _setting.set
configured = _setting.get
fill_policy = _setting.using  # the policy inside a block (`nodeflow plan --fill-policy`, tests)
parse = _setting.parse  # the policy a flag names; ValueError naming both otherwise


def burstable(opt: TypeOption) -> bool:
    """A burstable type (category `t`: t3, t3a, t4g): its price buys a CPU baseline of 5-40%, not the cores a pod's
    request holds, so it sets no price per unit to hold a growing node to (else every node stays a t3.medium)."""
    return opt.itype.labels.get(CATEGORY) == "t"


def dearer_fill(before: Sequence[TypeOption], after: Sequence[TypeOption], cpu: float, mem: int,
                memo: dict[tuple[float, int], tuple[float, TypeOption | None]] | None = None) -> bool:
    """Whether a node whose types were `before` and are `after` once a pod joins it (its requests then `cpu`
    cores, `mem` bytes) would pay more than `MAX_UNIT_PRICE_RISE` more per unit of that mix: under `CostAware`,
    the pod should go elsewhere. The price it is held to is the best of `before` that is not burstable. `memo`:
    the node's answers for `before` (NewNode.unit_memo), since every pod of a shape asks the same of every open
    node."""
    if _setting.value is FillPolicy.GREEDY:
        return False
    got = memo.get((cpu, mem)) if memo is not None else None
    if got is None:
        got = best_unit_price([o for o in before if not burstable(o)], cpu, mem)
        if memo is not None:
            memo[(cpu, mem)] = got
    was, best = got
    if best is None:
        return False
    price = best.cheapest()
    if any(o.itype is best.itype and o.cheapest() is price for o in after):
        return False  # the best type (at its best offering) is still there: nothing dearer
    return best_unit_price(after, cpu, mem)[0] > was * (1.0 + MAX_UNIT_PRICE_RISE)
