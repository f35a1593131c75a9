"""Cluster-default topology spread constraints in the simulation (kube-scheduler's PodTopologySpread
defaultConstraints; Karpenter v1.15 --scheduler-config, kubernetes-sigs/karpenter#3205; docs/semantics.md §3.5).

A pod with no topologySpreadConstraints of its own gets the defaults, each with the selector kube deduces from the
Services and the ReplicaSet / StatefulSet / ReplicationController that select it; a pod with its own keeps only
its own; `none` (the default) adds nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from planning_factory import AT, OLD, node_and_claim, nodepool, pod, snapshot

from api import labels as L
from planning.cluster import Cluster
from planning.planner.plan import plan
from planning.provisioning.provisioner import decide
from planning.scheduling import default_spread as ds
from planning.scheduling.preferences import ladder

HASH = "pod-template-hash"


def web(name: str, node: str | None, **kw) -> dict:
    """A Deployment's pod: owned by its ReplicaSet web-5d8f, labelled with the revision's hash."""
    p = pod(name, node, labels={"app": "web", HASH: "5d8f"}, **kw)
    p["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d8f",
                                         "uid": "rs-web-5d8f", "controller": True}]
    return p


def _pods(spread: ds.DefaultSpread, *objs) -> dict:
    cluster = Cluster.from_snapshot(snapshot(nodepool(), node_and_claim("a"), *objs), default_spread=spread)
    return {p.name: p for n in cluster.nodes for p in n.pods} | {p.name: p for p in cluster.pending}


def _spread(p) -> list:
    return (p.raw.get("spec") or {}).get("topologySpreadConstraints") or []


def test_a_deployments_pods_get_the_system_defaults_as_preferences() -> None:
    pods = _pods(ds.SYSTEM, web("web-1", "a"), web("web-2", None))
    for p in pods.values():
        got = _spread(p)
        assert [(c["topologyKey"], c["maxSkew"], c["whenUnsatisfiable"]) for c in got] == [
            (L.HOSTNAME_LABEL, 3, "ScheduleAnyway"), (L.ZONE_LABEL, 5, "ScheduleAnyway")]
        assert all(c["labelSelector"] == {"matchLabels": {"app": "web", HASH: "5d8f"}} for c in got)
        assert p.more is not None and p.more.relaxable  # preferences, tried strict first, then relaxed
        assert p.spread == []  # never a requirement by themselves
    strict, *_ = ladder(pods["web-2"].raw["spec"], False)
    assert [c["whenUnsatisfiable"] for c in strict[0]["topologySpreadConstraints"]] == ["DoNotSchedule"] * 2


def test_none_adds_nothing_and_is_the_default() -> None:
    assert ds.DEFAULT is ds.NONE and ds.configured() is ds.NONE
    for spread in (ds.NONE, None):
        pods = _pods(spread, web("web-1", "a"))
        assert _spread(pods["web-1"]) == [] and pods["web-1"].more is None


def test_a_pod_with_its_own_constraints_keeps_only_its_own() -> None:
    own = [{"maxSkew": 1, "topologyKey": L.ZONE_LABEL, "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}}}]
    pods = _pods(ds.SYSTEM, web("web-1", "a", spread=own))
    assert _spread(pods["web-1"]) == own


def test_pods_nothing_selects_get_no_defaults() -> None:
    """kube: a bare pod, or a Job's or DaemonSet's that no Service selects, has no deducible selector."""
    bare = pod("bare", "a", owner="")
    job = pod("job-1", "a", owner="Job")
    pods = _pods(ds.SYSTEM, bare, job)
    assert _spread(pods["bare"]) == [] and _spread(pods["job-1"]) == []


def test_the_selector_comes_from_services_and_owners_in_the_snapshot() -> None:
    """A Service selecting the pod adds its selector; a ReplicaSet in the snapshot gives its own (here without the
    pod's extra label); a StatefulSet's pods without one drop their per-pod labels; a Service alone defaults a Job."""
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "default"},
           "spec": {"selector": {"tier": "front"}}}
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web-5d8f", "namespace": "default"},
          "spec": {"selector": {"matchLabels": {"app": "web", HASH: "5d8f"}}}}
    w = web("web-1", "a")
    w["metadata"]["labels"].update(tier="front", extra="x")
    db = pod("db-0", "a", owner="StatefulSet", labels={"app": "db", "statefulset.kubernetes.io/pod-name": "db-0",
                                                       "apps.kubernetes.io/pod-index": "0",
                                                       "controller-revision-hash": "db-7c"})
    job = pod("job-1", "a", owner="Job", labels={"tier": "front"})
    pods = _pods(ds.SYSTEM, svc, rs, w, db, job)
    assert _spread(pods["web-1"])[0]["labelSelector"] == {"matchLabels": {"tier": "front", "app": "web",
                                                                          HASH: "5d8f"}}
    assert _spread(pods["db-0"])[0]["labelSelector"] == {"matchLabels": {"app": "db"}}
    assert _spread(pods["job-1"])[0]["labelSelector"] == {"matchLabels": {"tier": "front"}}


def test_the_system_defaults_spread_a_deployment_that_fits_one_node() -> None:
    """Eight 100m replicas pending, one empty m5.xlarge: without defaults they all go there; under `system` the
    hostname default (maxSkew 3, Karpenter's hostname minimum of 0) holds every node to 3 while a new node can take
    the rest, as Karpenter does with these defaults configured."""
    objs = [nodepool(), node_and_claim("a", last_pod_event=OLD)] + [web(f"web-{i}", None, cpu="100m")
                                                                  for i in range(8)]
    none = decide(snapshot(*objs), at=AT)
    assert none.launches == [] and set(none.scheduled.values()) == {"a"}
    with ds.default_spread(ds.SYSTEM):
        system = decide(snapshot(*objs), at=AT)
    assert len(system.launches) >= 2 and all(len(launch.pods) <= 3 for launch in system.launches)
    assert 0 < list(system.scheduled.values()).count("a") <= 3


def test_consolidation_under_system_keeps_a_deployment_spread() -> None:
    """Two m5.xlarge with three 100m replicas each: without defaults one small node replaces both (6 replicas on
    one hostname); under `system` no command puts more than 3 on one node: one node is replaced alone."""
    objs = [nodepool(), node_and_claim("a", last_pod_event=OLD), node_and_claim("b", last_pod_event=OLD)]
    objs += [web(f"web-{i}", "a" if i < 3 else "b", cpu="100m") for i in range(6)]
    merged = plan(snapshot(*objs), AT)
    assert [(c.nodes, len(c.replacements)) for c in merged.commands] == [(["a", "b"], 1)]
    with ds.default_spread(ds.SYSTEM):
        spread = plan(snapshot(*objs), AT)
    assert [(len(c.nodes), len(c.replacements)) for c in spread.commands] == [(1, 1)]


def test_the_setting_reads_none_system_or_a_file(tmp_path: Path) -> None:
    assert ds.load_default_spread("none") is ds.NONE and ds.load_default_spread("System") is ds.SYSTEM
    f = tmp_path / "spread.yaml"
    f.write_text("podTopologySpread:\n  defaultConstraints:\n  - {maxSkew: 1, topologyKey: topology.kubernetes.io/"
                 "zone, whenUnsatisfiable: DoNotSchedule}\n")
    got = ds.load_default_spread(str(f))
    assert got.mode == ds.SpreadMode.LIST and got.constraints[0]["maxSkew"] == 1
    f.write_text("[]")
    assert ds.load_default_spread(str(f)) is ds.NONE
    for bad, why in (("- {maxSkew: 0, topologyKey: k, whenUnsatisfiable: DoNotSchedule}", "maxSkew"),
                     ("- {maxSkew: 1, topologyKey: k, whenUnsatisfiable: Maybe}", "whenUnsatisfiable"),
                     ("- {maxSkew: 1, topologyKey: k, whenUnsatisfiable: DoNotSchedule, labelSelector: {}}",
                      "labelSelector"),
                     ("- {maxSkew: 1, topologyKey: k, whenUnsatisfiable: DoNotSchedule}\n"
                      "- {maxSkew: 2, topologyKey: k, whenUnsatisfiable: DoNotSchedule}", "duplicate")):
        f.write_text(bad)
        with pytest.raises(ValueError, match=why):
            ds.load_default_spread(str(f))
    with pytest.raises(ValueError, match="not none, system or a readable file"):
        ds.load_default_spread(str(tmp_path / "missing.yaml"))
