"""No drift starvation end to end (kubernetes-sigs/karpenter#3080, RFC kubernetes-sigs/karpenter#3128;
docs/semantics.md §4.4): dev server + simulator (wired to moto) + the real worker. A drift whose replacement never
becomes Ready rolls back; the pool's drift then backs off: the next pass starts no drift there, the NodePool gets a
DisruptionBlocked Event, the back-off counter moves and `nodeflow plan --kubeconfig` lists the pool under
`driftBackoffs`."""

from __future__ import annotations

import json

import pytest
from kubernetes import client as k8s
from support.disruption_stack import FAST, disruption_stack, never_ready_drift, wait_for

from api import labels
from contracts.disruption import DisruptionPhase
from starter.cli import run
from telemetry.metrics import REGISTRY

pytestmark = pytest.mark.e2e
BACKOFFS = "karpenter_voluntary_disruption_drift_backoffs_total"


def _pool_annotations(api: object) -> dict[str, str]:
    pool = k8s.CustomObjectsApi(api).get_cluster_custom_object("karpenter.sh", "v1", "nodepools", "default")
    return pool["metadata"].get("annotations") or {}


async def test_a_failed_drift_replacement_backs_the_pools_drift_off(temporal_client, sim_ec2, moto_endpoint,
                                                                   capsys) -> None:
    never_ready_drift(sim_ec2)
    settings = FAST.model_copy(update={"ready_timeout_seconds": 2.0})
    async with disruption_stack(temporal_client, sim_ec2, moto_endpoint, settings) as stack:
        before = REGISTRY.get_sample_value(BACKOFFS, {"nodepool": "default"}) or 0.0
        result = await stack.planner_pass()
        assert len(result.started) == 1
        outcome = await stack.outcome(result.started[0])
        assert outcome.outcome == DisruptionPhase.ROLLED_BACK
        assert REGISTRY.get_sample_value(BACKOFFS, {"nodepool": "default"}) == before + 1
        record = await wait_for(lambda: _pool_annotations(stack.api).get(labels.DRIFT_BACKOFF_ANNOTATION),
                                what="the pool's drift-backoff annotation")
        assert json.loads(record)["failures"] == 1

        held = await stack.planner_pass()  # old-0 is still drifted: held, not started again
        assert held.started == []
        blocked = [e["message"] for e in stack.events() if e["reason"] == "DisruptionBlocked"
                   and e["involvedObject"]["kind"] == "NodePool"]
        assert any(m.startswith("drift of nodepool default backs off until ") for m in blocked), blocked

        assert run(["plan", "--kubeconfig", sim_ec2.kubeconfig_path, "-o", "json"]) == 0
        plan = json.loads(capsys.readouterr().out)
        (row,) = plan["driftBackoffs"]
        assert (row["nodePool"], row["failures"]) == ("default", 1)
        assert not [c for c in plan["commands"] if c["method"] == "Drift"]
