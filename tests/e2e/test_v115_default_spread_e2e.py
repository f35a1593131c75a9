"""The cluster-default topology spread through the worker (kubernetes-sigs/karpenter#3205; docs/semantics.md §3.5):
dev server + simulator (wired to moto) + the real worker started with `--default-topology-spread FILE`. Three pending
pods of a ReplicaSet with no spread of their own get the cluster's zone constraint in the provisioner's simulation,
so their NodeClaims go to three zones; with the default (`none`) they share one node."""

from __future__ import annotations

from pathlib import Path

import pytest
from e2e.test_provisioning_e2e import ON_DEMAND_AMD64, provision, unschedulable
from support.disruption_stack import disruption_stack, fresh, replica_set, wait_for

from api import labels
from bench.clusters import node_pool
from contracts.provisioning import ProvisioningPhase
from planning.scheduling.default_spread import configure, load_default_spread
from telemetry.metrics import REGISTRY

pytestmark = pytest.mark.e2e
ZONE_SPREAD = ("- {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule}\n")
ZONES = {"key": labels.ZONE_LABEL, "operator": "In", "values": ["us-east-1a", "us-east-1b", "us-east-1c"]}


@pytest.mark.parametrize(("spread", "zones"), [("none", 1), ("file", 3)])
async def test_the_clusters_default_spread_places_pending_pods_across_zones(temporal_client, sim_ec2, moto_endpoint,
                                                                           tmp_path: Path, spread: str,
                                                                           zones: int) -> None:
    setting = "none"
    if spread == "file":
        (tmp_path / "spread.yaml").write_text(ZONE_SPREAD)
        setting = str(tmp_path / "spread.yaml")
    sim_ec2.load_objects(fresh([node_pool("default", requirements=[*ON_DEMAND_AMD64, ZONES],
                                          consolidate_after="Never"), replica_set("web", 3, "500m")]))
    try:
        async with disruption_stack(temporal_client, sim_ec2, moto_endpoint,
                                    worker={"default_topology_spread": setting}) as stack:
            refs = await wait_for(lambda: (r := unschedulable(stack, "web")) and len(r) == 3 and r,
                                  what="3 pending")
            result = await provision(stack, refs)
            assert result.outcome == ProvisioningPhase.SUCCEEDED, result.message
            claims = stack.node_claims()
            launched = {c["metadata"]["labels"].get(labels.ZONE_LABEL)
                        or next(r["values"][0] for r in c["spec"]["requirements"] if r["key"] == labels.ZONE_LABEL)
                        for c in claims}
            assert len(claims) == zones and len(launched) == zones, claims
            await stack.planner_pass()  # nodeflow's gauge of the pass: the three pods got the default constraint
            assert REGISTRY.get_sample_value("nodeflow_scheduling_default_spread_pods") == (3.0 if zones == 3 else 0.0)
    finally:
        configure(load_default_spread("none"))  # the setting is the process's: leave it as other tests expect
