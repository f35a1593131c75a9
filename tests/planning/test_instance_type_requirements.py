"""Requirements on Karpenter's well-known instance labels and computed allocatable on the planner's paths
(planning/scheduling/simulation.py `_options`, planning/provisioning/provisioner.py, planning/planner/plan.py);
docs/semantics.md §17."""

from __future__ import annotations

from api import labels as L
from api.catalog import load_default_catalog
from api.instance_types import labels as T
from planning.planner.plan import apply_commands, plan
from planning.provisioning.provisioner import decide
from tests.planning.planning_factory import AT, node_and_claim, nodepool, pod, snapshot

OD = {"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]}


def _types(decision: object) -> set[str]:
    return {t for launch in decision.launches for t in launch.replacement.instance_types}  # type: ignore[attr-defined]


def _generation(name: str) -> int:
    return int(load_default_catalog().get(name).labels[T.GENERATION])  # type: ignore[union-attr]


def test_generation_gt_6_launches_only_such_types() -> None:
    pool = nodepool(requirements=[OD, {"key": T.GENERATION, "operator": "Gt", "values": ["6"]}])
    decision = decide(snapshot(pool, pod("p-1", None, "1", "1Gi", phase="Pending")))
    types = _types(decision)
    assert types and all(_generation(t) > 6 for t in types)


def test_in_and_notin_on_category_and_exists_on_a_label_no_bundled_type_has() -> None:
    only_c = nodepool(requirements=[OD, {"key": T.CATEGORY, "operator": "In", "values": ["c"]}])
    types = _types(decide(snapshot(only_c, pod("p-1", None, "1", "1Gi", phase="Pending"))))
    assert types and all(t.startswith("c") for t in types)
    not_t = nodepool(requirements=[OD, {"key": T.CATEGORY, "operator": "NotIn", "values": ["t", "m"]}])
    types = _types(decide(snapshot(not_t, pod("p-1", None, "1", "1Gi", phase="Pending"))))
    assert types and not any(t[0] in "tm" for t in types)
    # no bundled type has a GPU: Exists on gpu-name (a well-known key, so never a label the pool sets) allows none
    gpu = nodepool(requirements=[OD, {"key": T.GPU_NAME, "operator": "In", "values": ["a100"]}])
    decision = decide(snapshot(gpu, pod("p-1", None, "1", "1Gi", phase="Pending")))
    assert decision.launches == [] and decision.unservable


def test_pod_node_affinity_on_generation_narrows_the_new_node() -> None:
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": T.GENERATION, "operator": "Lt", "values": ["6"]}]}]}}}
    decision = decide(snapshot(nodepool(requirements=[OD]),
                               pod("p-1", None, "1", "1Gi", phase="Pending", affinity=affinity)))
    types = _types(decision)
    assert types and all(_generation(t) < 6 for t in types)


def test_four_one_cpu_pods_do_not_fit_a_four_vcpu_type() -> None:
    """The issue's c5.xlarge: 4 vCPU is 3920m allocatable, so four 1-CPU pods need more than one such node."""
    pool = nodepool(requirements=[OD, {"key": L.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["c5.xlarge"]}])
    pods = [pod(f"p-{i}", None, "1", "1Gi", phase="Pending") for i in range(4)]
    decision = decide(snapshot(pool, *pods))
    assert len(decision.launches) == 2
    assert sorted(len(launch.pods) for launch in decision.launches) == [1, 3]


def test_observed_allocatable_of_a_real_node_wins_over_the_computed_one() -> None:
    """A node of the type reports its allocatable (what kube-scheduler sees): a new node of that type gets it."""
    node, claim = node_and_claim("n-1", "c5.xlarge")  # the factory's node reports raw capacity (4 CPU)
    busy = pod("busy", "n-1", "3900m", "1Gi")
    pool = nodepool(requirements=[OD, {"key": L.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["c5.xlarge"]}])
    pods = [pod(f"p-{i}", None, "1", "1Gi", phase="Pending") for i in range(4)]
    decision = decide(snapshot(pool, node, claim, busy, *pods))
    assert [len(launch.pods) for launch in decision.launches] == [4]


def test_min_values_on_a_well_known_label_is_honoured() -> None:
    pool = nodepool(requirements=[OD, {"key": T.FAMILY, "operator": "Exists", "minValues": 3}])
    (launch,) = decide(snapshot(pool, pod("p-1", None, "1", "1Gi", phase="Pending"))).launches
    families = {t.split(".")[0] for t in launch.replacement.instance_types}
    assert len(families) >= 3


def test_a_launched_replacement_reports_computed_allocatable() -> None:
    objs = [nodepool(requirements=[OD]), *node_and_claim("a", "m5.2xlarge"), *node_and_claim("b", "m5.2xlarge"),
            pod("x-1", "a", "300m", "1Gi"), pod("y-1", "b", "300m", "1Gi")]
    snap = snapshot(*objs)
    result = plan(snap, AT)
    assert result.commands
    after = apply_commands(snap, result.commands, at=AT)
    new = [n for n in after.nodes if n["metadata"]["name"] not in ("a", "b")]
    assert new
    for n in new:
        status = n["status"]
        assert status["allocatable"] != status["capacity"]
        assert status["allocatable"]["pods"] == status["capacity"]["pods"]
        if n["metadata"]["labels"][L.INSTANCE_TYPE_LABEL] == "m5.large":
            assert status["allocatable"]["cpu"] == "1930m" and status["allocatable"]["memory"] == "6903Mi"


def test_a_launching_claim_holds_karpenters_allocatable_unless_a_real_node_of_its_type_reports_one() -> None:
    """A c5.xlarge NodeClaim still launching (no status): 3920m, so three of four 1-CPU pods are nominated to it."""
    claim = node_and_claim("booting", "c5.xlarge", created=AT)[1]
    claim["status"] = {}
    claim["spec"]["requirements"] = [{"key": L.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["c5.xlarge"]}]
    pool = nodepool(requirements=[OD])
    pods = [pod(f"p-{i}", None, "1", "1Gi", phase="Pending") for i in range(4)]
    decision = decide(snapshot(pool, claim, *pods), at=AT)
    assert len(decision.nominated) == 3 and sum(len(launch.pods) for launch in decision.launches) == 1
    node, real_claim = node_and_claim("real", "c5.xlarge")  # reports 4 CPU allocatable
    full = pod("full", "real", "4", "1Gi")
    decision = decide(snapshot(pool, claim, node, real_claim, full, *pods), at=AT)
    assert len(decision.nominated) == 4 and decision.launches == []


def test_the_launch_record_writes_karpenters_allocatable_on_the_claim() -> None:
    from planning.lifecycle.launch import launch_patch

    claim = node_and_claim("c", "m5.large")[1]
    claim["status"] = {}
    instance = {"InstanceId": "i-1", "Placement": {"AvailabilityZone": "us-east-1a"}}
    _, status = launch_patch(claim, instance, load_default_catalog().get("m5.large"), AT)
    assert status is not None
    alloc = status["status"]["allocatable"]
    assert (alloc["cpu"], alloc["memory"], alloc["pods"]) == ("1930m", "6903Mi", "29")


def test_offerings_are_limited_to_the_zones_of_the_node_class_subnets() -> None:
    """Karpenter intersects a type's offering zones with the EC2NodeClass's subnet zones (computeRequirements)."""
    node_class = {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": "default"},
                  "spec": {"role": "NodeRole", "amiSelectorTerms": [{"alias": "al2023@latest"}],
                           "subnetSelectorTerms": [{"tags": {"k": "v"}}],
                           "securityGroupSelectorTerms": [{"tags": {"k": "v"}}]},
                  "status": {"amis": [{"id": "ami-1", "name": "al2023", "requirements": [
                      {"key": L.ARCH_LABEL, "operator": "In", "values": ["amd64"]}]}],
                      "subnets": [{"id": "subnet-b", "zone": "us-east-1b"}], "securityGroups": [{"id": "sg-a"}],
                      "conditions": [{"type": "Ready", "status": "True", "reason": "Ready",
                                      "lastTransitionTime": "2026-11-22T19:00:00Z"}]}}
    (launch,) = decide(snapshot(nodepool(requirements=[OD]), node_class,
                                pod("p-1", None, "1", "1Gi", phase="Pending"))).launches
    assert launch.replacement.zone == "us-east-1b"
    (free,) = decide(snapshot(nodepool(requirements=[OD]), pod("p-1", None, "1", "1Gi", phase="Pending"))).launches
    assert free.replacement.zone is None  # no class: every zone of the catalog


def test_a_pool_whose_types_cannot_meet_min_values_launches_nothing() -> None:
    """Karpenter's scheduler keeps a new NodeClaim only while its remaining types satisfy minValues: 2 families
    (m5, c5) never meet a minValues of 3 on instance-family, however the pod fits."""
    pool = nodepool(requirements=[
        OD, {"key": L.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["m5.large", "m5.xlarge", "c5.xlarge"]},
        {"key": T.FAMILY, "operator": "Exists", "minValues": 3}])
    decision = decide(snapshot(pool, pod("p-1", None, "1", "1Gi", phase="Pending")))
    assert decision.launches == [] and [u.pod for u in decision.unservable] == ["default/p-1"]
    pool["spec"]["template"]["spec"]["requirements"][2]["minValues"] = 2
    (launch,) = decide(snapshot(pool, pod("p-1", None, "1", "1Gi", phase="Pending"))).launches
    assert {t.split(".")[0] for t in launch.replacement.instance_types} == {"m5", "c5"}


def test_a_big_pod_narrows_the_options_below_min_values_and_opens_no_node() -> None:
    """Options shrink as pods join: a 3.5-CPU pod leaves only 4-vCPU-and-up types; with minValues 2 on
    instance-cpu among {m5.large (2), c5.xlarge (4)} only one cpu value remains, so no new node takes it."""
    pool = nodepool(requirements=[
        OD, {"key": L.INSTANCE_TYPE_LABEL, "operator": "In", "values": ["m5.large", "c5.xlarge"]},
        {"key": T.CPU, "operator": "Exists", "minValues": 2}])
    small = decide(snapshot(pool, pod("s-1", None, "500m", "1Gi", phase="Pending")))
    assert len(small.launches) == 1
    big = decide(snapshot(pool, pod("b-1", None, "3500m", "1Gi", phase="Pending")))
    assert big.launches == []


def test_ephemeral_storage_allocatable_of_a_new_node_is_karpenters() -> None:
    """AL2023's 20Gi root volume less 1Gi kube-reserved and 10% nodefs.available: 17Gi, so an 18Gi pod needs a
    class with a bigger volume."""
    pool = nodepool(requirements=[OD])
    big = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "ephemeral-storage": "18Gi"}}}]}
    fits = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "ephemeral-storage": "16Gi"}}}]}
    p_big, p_fits = pod("big", None, phase="Pending"), pod("fits", None, phase="Pending")
    p_big["spec"].update(big)
    p_fits["spec"].update(fits)
    assert decide(snapshot(pool, p_big)).launches == []
    assert len(decide(snapshot(pool, p_fits)).launches) == 1
