"""`nodeflow validate` for DisruptionPolicy documents: every problem with its field path, and the problems only a
set of documents shows (two policies selecting one NodePool, a gracefulExpireAfter not shorter than the pool's
expireAfter). The same rules are in the CRD (deploy/crds/nodeflow.dev_disruptionpolicies.yaml) where OpenAPI and
CEL can say them; cron parsing and IANA zone names only here, as for NodePool budgets.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from api.disruption_policy import DisruptionPolicy, resolve_policies
from api.duration import format_duration
from api.model_problems import model_problems
from api.nodepool import NodePool
from api.policy_limits_validation import limits_set_problems
from api.policy_spot_validation import spot_set_problems

DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
MAX_NAME = 253


def validate_disruption_policy(obj: Any) -> list[str]:
    """Every problem of one DisruptionPolicy document (a dict) as `path: problem`; empty when it is valid."""
    if not isinstance(obj, dict):
        return [f"(document): must be an object, got {type(obj).__name__}"]
    problems: list[str] = []
    meta = obj.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    if not isinstance(name, str) or not name:
        problems.append("metadata.name: required field is missing")
    elif len(name) > MAX_NAME or re.fullmatch(DNS_SUBDOMAIN, name) is None:
        problems.append(f"metadata.name: {name!r} must be a DNS subdomain (lower case, at most {MAX_NAME})")
    if isinstance(meta, dict) and meta.get("namespace"):
        problems.append("metadata.namespace: DisruptionPolicy is cluster-scoped; remove the namespace")
    try:
        policy = DisruptionPolicy.model_validate(obj)
    except ValidationError as exc:
        return problems + model_problems(exc)
    return problems + drain_problems(policy)


def drain_problems(policy: DisruptionPolicy) -> list[str]:
    """drain (docs/semantics.md §15.8): a maxWait that `jobs: Evict` ignores, and an escalation that would force
    the Job pods off before maxWait ends (its forceAfter runs from the same start, the termination's)."""
    drain, esc = policy.spec.drain, policy.spec.escalation
    if drain is None or drain.wait is None:
        return []
    if drain.jobs.value != "Wait":
        return [f"spec.drain.maxWait: {drain.max_wait} has no effect with jobs: {drain.jobs.value} (use jobs: Wait)"]
    if esc is not None and esc.force is not None and esc.force <= drain.wait:
        return [f"spec.drain.maxWait: {drain.max_wait} is not shorter than spec.escalation.forceAfter "
                f"({esc.force_after}); the escalation would force the Job pods off before maxWait ends"]
    return []


def policy_set_problems(nodepools: Sequence[NodePool], policies: Sequence[DisruptionPolicy]) -> list[tuple[str, str]]:
    """(policy name, `path: problem`) for what only the documents together show: two policies on one NodePool
    (reported on both), and a gracefulExpireAfter that is not shorter than the selected pool's expireAfter."""
    chosen, conflicts = resolve_policies(nodepools, policies)
    out: list[tuple[str, str]] = []
    for c in conflicts:
        for name in (c.first, c.second):
            out.append((name, f"spec: {c}"))
    for pool in nodepools:
        policy = chosen.get(pool.name)
        graceful = policy.graceful_expire_after if policy is not None else None
        hard = pool.expire_after
        if policy is None or graceful is None or hard is None or graceful < hard:
            continue
        out.append((policy.name, f"spec.expiration.gracefulExpireAfter: {format_duration(graceful)} must be shorter "
                                 f"than NodePool {pool.name!r}'s expireAfter ({format_duration(hard)}); its nodes "
                                 "would expire forcefully before the graceful replacement starts"))
    out += spot_set_problems(nodepools, policies)  # spot fallback, zone balance (api/policy_spot_validation.py)
    return out + limits_set_problems(nodepools, policies)  # deprecation, jitter (api/policy_limits_validation.py)
