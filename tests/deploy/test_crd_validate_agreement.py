"""`nodeflow validate` (api/disruption_policy_validation.py) and the DisruptionPolicy CRD, as the simulator enforces
it (schema and CEL rules), refuse the same documents, so a policy that passes one passes the other. The exceptions
are the documented ones: cron schedules and IANA zones are checked only by nodeflow (CEL cannot), and an unknown
field is pruned by the API server unless the client asks for Strict (kubectl does) while nodeflow refuses it."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from api.disruption_policy_validation import validate_disruption_policy
from simulator.crd_validation import admit
from simulator.errors import ApiError
from simulator.resources import BY_KIND

DP = BY_KIND["DisruptionPolicy"]


def policy(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "nodeflow.dev/v1alpha1", "kind": "DisruptionPolicy", "metadata": {"name": "p"},
            "spec": {"nodePools": ["general"], **spec}}


def emulator_refuses(doc: dict[str, Any]) -> list[str]:
    try:
        admit(DP, copy.deepcopy(doc))
    except ApiError as exc:
        return [f"{c['field']}: {c['message']}" for c in (exc.details or {}).get("causes", [])]
    return []


SPECS: list[dict[str, Any]] = [
    {}, {"nodePools": None, "nodePoolSelector": {"matchLabels": {"tier": "a"}}},
    {"nodePoolSelector": {"matchLabels": {"tier": "a"}}},
    {"nodePools": ["a" * 63]}, {"nodePools": ["a" * 64]}, {"nodePools": []},
    {"drift": {"waves": [1, "10%", "100%"], "bakeTime": "30m", "maxFailedReplacements": 1, "healthTimeout": "10m"}},
    {"drift": {"waves": [1, "150%"]}}, {"drift": {"waves": ["1000%"]}}, {"drift": {"waves": [0]}},
    {"drift": {"waves": [1] * 21}}, {"drift": {"waves": []}}, {"drift": {"bakeTime": "0s"}},
    {"drift": {"bakeTime": "10 minutes"}}, {"drift": {"maxFailedReplacements": -1}},
    {"escalation": {"notifyAfter": "2h", "forceAfter": "1h"}},
    {"escalation": {"notifyAfter": "2h", "forceAfter": "3h"}},
    {"hooks": {"preDisruption": {"url": "http://gate:8080/pre", "ack": "Required", "ackTimeout": "15m"}}},
    {"hooks": {"preDisruption": {"url": "http://x", "ack": "Maybe"}}}, {"hooks": {"notify": {}}},
    {"hooks": {"preDisruption": {"url": "ftp://x"}}},
    {"consolidation": {"minSavingsPercent": 101}}, {"consolidation": {"minSavingsPerHour": "abc"}},
    {"consolidation": {"minSavingsPerHour": "0.05", "minSavingsPercent": 10, "perPodDisruptionCost": "0.002"}},
    {"calendar": {"exclusions": [{"from": "2026-13-01"}]}},
    {"calendar": {"exclusions": [{"from": "2026-12-20", "to": "2026-12-01"}]}},
    {"calendar": {"exclusions": [{"from": "2026-12-20", "to": "2027-01-02"}]}},
    {"calendar": {"allowWindows": [{"schedule": "0 1 * * *"}]}},
    {"calendar": {"allowWindows": [{"schedule": "0 1 * * 1-5", "duration": "4h"}], "timeZone": "Europe/Berlin"}},
    {"expiration": {"gracefulExpireAfter": "0s"}}, {"expiration": {"gracefulExpireAfter": "600h"}},
]


@pytest.mark.parametrize("spec", SPECS, ids=[str(i) for i in range(len(SPECS))])
def test_nodeflow_validate_and_the_crd_agree(spec: dict[str, Any]) -> None:
    doc = policy(**spec)
    if spec.get("nodePools", "") is None:
        del doc["spec"]["nodePools"]
    ours, theirs = validate_disruption_policy(copy.deepcopy(doc)), emulator_refuses(doc)
    assert bool(ours) == bool(theirs), f"nodeflow validate: {ours}; the CRD: {theirs}"


@pytest.mark.parametrize("spec", [{"calendar": {"timeZone": "Mars/Base"}},
                                  {"calendar": {"allowWindows": [{"schedule": "61 25 * * *", "duration": "4h"}]}}])
def test_only_nodeflow_checks_cron_and_zones(spec: dict[str, Any]) -> None:
    assert validate_disruption_policy(policy(**spec)) and not emulator_refuses(policy(**spec))
