"""The controls of a DisruptionPolicy that a DisruptionWorkflow carries in its input (docs/semantics.md §15): the
pre-disruption hook, the notify URL, escalation and the drain's `jobs: Wait` (§15.8). Plain seconds, not the
resource's Go durations, so the input stays decodable by workers of the previous release whatever the resource's
shape grows into."""

from __future__ import annotations

import hashlib
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

ROLLOUT_PREFIX = "rollout-"


class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True, frozen=False)


class HookSpec(_Model):
    """The pre-disruption hook: called before a node is tainted; with `ack_required` its 2xx (or an approval)
    gates the disruption for up to `ack_timeout_seconds`, then `abandon_on_timeout` decides."""

    url: str
    ack_required: bool = False
    ack_timeout_seconds: float = 900.0
    abandon_on_timeout: bool = True


class EscalationSpec(_Model):
    """A graceful disruption whose drain stays blocked: notify after `notify_after_seconds`, force after
    `force_after_seconds` (None: never)."""

    notify_after_seconds: float | None = None
    force_after_seconds: float | None = None


class DrainSpec(_Model):
    """`drain: {jobs: Wait, maxWait}`: the candidates' terminations leave Job pods (and pods annotated
    nodeflow.dev/wait-for-completion) to finish for up to `max_wait_seconds` (None: until the grace-period deadline)."""

    wait_for_completion: bool = True
    max_wait_seconds: float | None = None
    policy: str = ""  # the DisruptionPolicy's name (progress, Web UI)


class WavesSpec(_Model):
    """Drift waves: cumulative targets (counts or "N%") of the pool's drifted nodes, a bake between waves."""

    waves: list[int | str] = Field(default_factory=lambda: ["100%"])
    bake_seconds: float = 0.0
    max_failed_replacements: int = 1
    health_timeout_seconds: float = 600.0


class PolicyControls(_Model):
    """The workflow-side controls of the DisruptionPolicy that applies to a command's NodePool."""

    policy: str
    pre_disruption: HookSpec | None = None
    notify_url: str | None = None
    escalation: EscalationSpec | None = None
    drain: DrainSpec | None = None  # None: Jobs' pods are evicted with the rest, as Karpenter does


def _seconds(d: Any, default: Any) -> Any:
    return d.total_seconds() if d is not None else default


def drain_of(policy: Any) -> DrainSpec | None:
    """The `drain` of a DisruptionPolicy when it waits for Jobs; None for `jobs: Evict` (the default) or no drain."""
    drain = policy.spec.drain if policy is not None else None
    if drain is None or drain.jobs.value != "Wait":
        return None
    return DrainSpec(max_wait_seconds=_seconds(drain.wait, None), policy=policy.name)


def controls_of(policy: Any) -> PolicyControls | None:
    """The hook, notify, escalation and drain parts of an `api.disruption_policy.DisruptionPolicy`; None when it
    has none (so a disruption without them keeps the exact history it had before policies existed)."""
    if policy is None:
        return None
    spec = policy.spec
    hooks, esc = spec.hooks, spec.escalation
    pre = hooks.pre_disruption if hooks else None
    out = PolicyControls(policy=policy.name, notify_url=hooks.notify.url if hooks and hooks.notify else None)
    if pre is not None:
        out.pre_disruption = HookSpec(url=pre.url, ack_required=pre.ack.value == "Required",
                                      ack_timeout_seconds=_seconds(pre.ack_wait, 900.0),
                                      abandon_on_timeout=pre.on_timeout.value == "Abandon")
    if esc is not None and (esc.notify or esc.force):
        out.escalation = EscalationSpec(notify_after_seconds=_seconds(esc.notify, None),
                                        force_after_seconds=_seconds(esc.force, None))
    out.drain = drain_of(policy)
    if out.pre_disruption is None and out.notify_url is None and out.escalation is None and out.drain is None:
        return None
    return out


def rollout_id(node_pool: str, generation: str) -> str:
    """One rollout per NodePool and drift generation (the pool's template hash): a new template, a new rollout."""
    digest = hashlib.sha256(generation.encode()).hexdigest()[:10]
    return f"{ROLLOUT_PREFIX}{node_pool}-{digest}"


class RolloutStart(_Model):
    """From a planner pass: this pool has drifted nodes and its policy rolls drift out in waves."""

    node_pool: str
    generation: str
    waves: WavesSpec
    controls: PolicyControls | None = None

    @property
    def workflow_id(self) -> str:
        return rollout_id(self.node_pool, self.generation)
