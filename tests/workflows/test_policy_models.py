"""The DisruptionPolicy controls as workflow payloads: converted once from the resource (seconds, enums to flags),
absent when a policy has none (so disruptions keep their old history), stable rollout ids per pool and generation."""

from __future__ import annotations

from api.disruption_policy import load_disruption_policy
from contracts.disruption import DisruptionInput, DisruptionResult
from contracts.policy import wave_targets, waves_of
from contracts.policy_controls import controls_of, rollout_id


def _policy(**spec) -> object:
    return load_disruption_policy({"apiVersion": "nodeflow.dev/v1alpha1", "kind": "DisruptionPolicy",
                                   "metadata": {"name": "general-rollout"},
                                   "spec": {"nodePools": ["general"], **spec}})


def test_controls_carry_hooks_and_escalation_in_seconds() -> None:
    c = controls_of(_policy(hooks={"preDisruption": {"url": "http://h/x", "ack": "Required", "ackTimeout": "15m",
                                                     "onTimeout": "Proceed"},
                                   "notify": {"url": "http://n/y"}},
                            escalation={"notifyAfter": "2h", "forceAfter": "24h"}))
    assert c is not None and c.policy == "general-rollout" and c.notify_url == "http://n/y"
    assert c.pre_disruption.ack_required and c.pre_disruption.ack_timeout_seconds == 900
    assert not c.pre_disruption.abandon_on_timeout
    assert (c.escalation.notify_after_seconds, c.escalation.force_after_seconds) == (7200, 86400)


def test_a_policy_without_workflow_controls_adds_nothing() -> None:
    assert controls_of(_policy(calendar={"timeZone": "Europe/Berlin"})) is None
    assert controls_of(None) is None
    assert waves_of(_policy(drift={"bakeTime": "30m"})) is None


def test_waves_default_and_targets() -> None:
    w = waves_of(_policy(drift={"waves": [1, "10%", "100%"], "bakeTime": "30m"}))
    assert w.bake_seconds == 1800 and w.max_failed_replacements == 1 and w.health_timeout_seconds == 600
    assert wave_targets(w.waves, 40) == [1, 4, 40]
    assert wave_targets(w.waves, 1) == [1]
    assert wave_targets(w.waves, 0) == []


def test_rollout_id_is_stable_per_pool_and_generation() -> None:
    assert rollout_id("general", "abc") == rollout_id("general", "abc")
    assert rollout_id("general", "abc") != rollout_id("general", "abd")
    assert rollout_id("general", "abc").startswith("rollout-general-")


def test_old_payloads_decode_without_the_new_fields() -> None:
    cmd = {"method": "Drift", "reason": "Drifted", "node_pool": "p", "nodes": [{"name": "n", "uid": "u"}]}
    assert DisruptionInput.model_validate({"command": cmd}).policy is None
    assert DisruptionResult.model_validate({"outcome": "Succeeded"}).rollback_cause is None
