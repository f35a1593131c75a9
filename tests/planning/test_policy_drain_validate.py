"""`nodeflow validate` on a DisruptionPolicy's drain (docs/semantics.md §15.8)."""

from __future__ import annotations

from typing import Any

from api.disruption_policy_validation import validate_disruption_policy


def _doc(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "nodeflow.dev/v1alpha1", "kind": "DisruptionPolicy", "metadata": {"name": "batch"},
            "spec": {"nodePools": ["batch"], **spec}}


def test_wait_with_max_wait_is_valid():
    assert validate_disruption_policy(_doc(drain={"jobs": "Wait", "maxWait": "2h"})) == []
    assert validate_disruption_policy(_doc(drain={"jobs": "Wait"})) == []


def test_max_wait_without_wait_is_reported():
    assert validate_disruption_policy(_doc(drain={"maxWait": "2h"})) == [
        "spec.drain.maxWait: 2h has no effect with jobs: Evict (use jobs: Wait)"]


def test_an_escalation_that_forces_before_max_wait_is_reported():
    doc = _doc(drain={"jobs": "Wait", "maxWait": "2h"}, escalation={"notifyAfter": "30m", "forceAfter": "1h"})
    (problem,) = validate_disruption_policy(doc)
    assert problem.startswith("spec.drain.maxWait: 2h is not shorter than spec.escalation.forceAfter (1h)")
    ok = _doc(drain={"jobs": "Wait", "maxWait": "2h"}, escalation={"forceAfter": "3h"})
    assert validate_disruption_policy(ok) == []


def test_bad_values_are_the_models_errors():
    problems = validate_disruption_policy(_doc(drain={"jobs": "Sometimes", "maxWait": "soon"}))
    assert any(p.startswith("spec.drain.jobs") for p in problems)
    assert any(p.startswith("spec.drain.maxWait") for p in problems)
