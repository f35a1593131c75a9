"""`nodeflow validate` across documents: DisruptionPolicies that conflict on a NodePool, or whose
gracefulExpireAfter is not shorter than the selected NodePool's expireAfter (api/disruption_policy_validation.py).
Only documents that are valid on their own take part; their own problems are reported one by one."""

from __future__ import annotations

from typing import Any

# Our modules that load pydantic, temporalio or kubernetes are imported inside the functions that use them:
# this module loads with `nodeflow --help` (starter/cli.py builds every command's parser), which takes 0.13 s
# without them and 0.83 s with them (farm-bench, median).


def policy_set_lines(located: list[tuple[str, Any]]) -> list[str]:
    """`WHERE: path: problem` lines for the set of (location, object) read from every file of one run."""
    from pydantic import ValidationError

    from api.disruption_policy import DisruptionPolicy
    from api.disruption_policy_validation import policy_set_problems
    from api.nodepool import NodePool

    pools: list[NodePool] = []
    policies: list[DisruptionPolicy] = []
    where_of: dict[str, str] = {}
    for where, obj in located:
        if not isinstance(obj, dict):
            continue
        try:
            if obj.get("kind") == "NodePool":
                pools.append(NodePool.model_validate(obj))
            elif obj.get("kind") == "DisruptionPolicy":
                policy = DisruptionPolicy.model_validate(obj)
                policies.append(policy)
                where_of.setdefault(policy.name, where)
        except (ValidationError, ValueError):
            continue
    if len(policies) < 2 and not pools:
        return []
    return [f"{where_of[name]}: {problem}" for name, problem in policy_set_problems(pools, policies)]
