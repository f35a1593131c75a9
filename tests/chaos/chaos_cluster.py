"""The chaos suite's cluster and its end-state checks (plain dicts and boto3/kubernetes reads, no Temporal).

Two NodePools, so that every node has one intended fate:
- `drift` (consolidation off, budget 2): four `old-*` nodes launched from a stale template are replaced by
  pre-spun nodes (DisruptionWorkflow: RunInstances with a ClientToken, then termination of the old node);
- `general` (WhenEmpty, budget 100%): `empty-*` nodes are deleted by Emptiness, `manual-*` nodes are deleted by
  a user (watcher -> TerminationWorkflow), `keep-*` nodes (do-not-disrupt) must stay untouched, `grace-*`
  nodes (NodeClaim `terminationGracePeriod: 60s`) are deleted by a user while their `hold-*` pods sit behind
  a `maxUnavailable: 0` PDB: no eviction ever succeeds, so each pod goes on the grace-deadline path, deleted
  at `deadline - its terminationGracePeriodSeconds` (HOLD_GRACE) and counted by the ledger there.
Pods are pinned to their pool by nodeSelector and guarded by PDBs (maxUnavailable 1; `hold` 0). The hold
pods' replacements can only go to nodes labelled HOLD (keep-* and grace-*), never to a node a drain needs empty.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from kubernetes import client as k8s

from api import labels
from bench.clusters import node_objects, node_pool
from bench.soak_summary import late_pods
from devstack import audit as audit_counts
from simulator.ledger import Ledger

ROLE = "nodeflow.dev/chaos-role"
HOLD = "nodeflow.dev/chaos-hold"
DRIFTED = [f"old-{i}" for i in range(5)]
# Held by do-not-disrupt until the API outage phase releases it, so a drift replacement is launching when the outage
# begins: the scenario makes the moment it needs instead of hoping the other drifts are still running then.
LATE_DRIFT = DRIFTED[-1]
EMPTY = [f"empty-{i}" for i in range(2)]
MANUAL = [f"manual-{i}" for i in range(3)]
KEEP = [f"keep-{i}" for i in range(2)]
GRACE = [f"grace-{i}" for i in range(3)]
NODE_GRACE_SECONDS = 60  # the grace-* NodeClaims' spec.terminationGracePeriod
HOLD_GRACE = {"hold-long": 40, "hold-short": 20}  # app -> the pods' terminationGracePeriodSeconds
# app -> (pool, replicas, cpu)
APPS = {"web": ("drift", len(DRIFTED), "1500m"), "api": ("general", 6, "500m"),
        **{app: ("general", len(GRACE), "200m") for app in HOLD_GRACE}}
ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")


def _pod_template(app: str, pool: str, cpu: str) -> dict[str, Any]:
    selector = {labels.NODEPOOL_LABEL: pool}
    if app in HOLD_GRACE:
        selector[HOLD] = "true"  # keep-* and grace-* only
    elif pool == "general":
        selector[ROLE] = "general"  # never onto the empty-* (or grace-*) nodes, which must hold only their own
    spec: dict[str, Any] = {"terminationGracePeriodSeconds": HOLD_GRACE.get(app, 1), "nodeSelector": selector,
                            "containers": [{"name": "app", "image": "app",
                                            "resources": {"requests": {"cpu": cpu, "memory": "256Mi"}}}]}
    if app == "web":  # one per node, so every drift, LATE_DRIFT's too, needs a replacement launched and made Ready:
        # a replacement with room for a second web pod once made LATE_DRIFT's drift delete-only, and the API outage,
        # waiting for a readiness wait, met none
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    return {"metadata": {"labels": {"app": app, "guard": "hold" if app in HOLD_GRACE else app}}, "spec": spec}


def cluster_objects() -> list[dict[str, Any]]:
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")  # fresh: expireAfter plays no part
    drift = node_pool("drift", budgets=[{"nodes": "2"}], consolidate_after="Never")
    general = node_pool("general", budgets=[{"nodes": "100%"}])
    general["spec"]["disruption"]["consolidationPolicy"] = "WhenEmpty"
    objs: list[dict[str, Any]] = [drift, general]
    plan = [(n, "m5.large", "drift", {labels.TEMPLATE_HASH_ANNOTATION: "stale-template",
                                       **({labels.DO_NOT_DISRUPT_ANNOTATION: "true"} if n == LATE_DRIFT else {})})
            for n in DRIFTED]
    plan += [(n, "m5.large", "general", {}) for n in EMPTY + MANUAL + GRACE]
    plan += [(n, "m5.xlarge", "general", {labels.DO_NOT_DISRUPT_ANNOTATION: "true"}) for n in KEEP]
    for i, (name, itype, pool, notes) in enumerate(plan):
        for obj in node_objects(name, itype, zone=ZONES[i % 3], pool=pool, annotations=notes):
            obj["metadata"]["creationTimestamp"] = now
            if obj["kind"] == "Node" and not name.startswith(("empty-", "grace-")):
                obj["metadata"]["labels"][ROLE] = "general" if pool == "general" else "drift"
            if obj["kind"] == "Node" and name.startswith(("keep-", "grace-")):
                obj["metadata"]["labels"][HOLD] = "true"
            if obj["kind"] == "NodeClaim" and name in GRACE:
                obj["spec"]["terminationGracePeriod"] = f"{NODE_GRACE_SECONDS}s"
            obj["metadata"]["finalizers"] = [labels.TERMINATION_FINALIZER]
            objs.append(obj)
    homes = {"web": DRIFTED, "api": MANUAL + KEEP, **{app: GRACE for app in HOLD_GRACE}}
    for app, (pool, replicas, cpu) in APPS.items():
        owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
                 "metadata": {"name": app, "namespace": "default", "uid": f"uid-rs-{app}"},
                 "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": app}},
                          "template": _pod_template(app, pool, cpu)}}
        objs.append(owner)
        for i in range(replicas):
            tmpl = _pod_template(app, pool, cpu)
            objs.append({"apiVersion": "v1", "kind": "Pod",
                         "metadata": {"name": f"{app}-{i}", "namespace": "default", "uid": f"uid-{app}-{i}",
                                      "labels": dict(tmpl["metadata"]["labels"]),
                                      "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                                           "name": app, "uid": f"uid-rs-{app}",
                                                           "controller": True}]},
                         "spec": {**tmpl["spec"], "nodeName": homes[app][i % len(homes[app])]}})
        if app not in HOLD_GRACE:
            objs.append({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                         "metadata": {"name": app, "namespace": "default"},
                         "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"guard": app}}}})
    objs.append({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                 "metadata": {"name": "hold", "namespace": "default"},
                 "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"guard": "hold"}}}})
    return objs


def retry(fn: Any, *args: Any, attempts: int = 30, **kw: Any) -> Any:
    """A Kubernetes call through the injected 429/500/409 faults, retried like any client would."""
    for attempt in range(attempts):
        try:
            return fn(*args, **kw)
        except k8s.ApiException as exc:
            if exc.status not in (409, 429, 500) or attempt == attempts - 1:
                raise
            time.sleep(0.1)
    raise AssertionError("unreachable")


def nodes(api: Any) -> list[dict[str, Any]]:
    return api.sanitize_for_serialization(retry(k8s.CoreV1Api(api).list_node).items)


def node_claims(api: Any) -> list[dict[str, Any]]:
    return retry(k8s.CustomObjectsApi(api).list_cluster_custom_object, "karpenter.sh", "v1", "nodeclaims")["items"]


def running_pods(api: Any, app: str) -> int:
    pods = retry(k8s.CoreV1Api(api).list_namespaced_pod, "default", label_selector=f"app={app}").items
    return sum(1 for p in pods if p.status.phase == "Running" and not p.metadata.deletion_timestamp)


def settled(api: Any) -> bool:
    """The intended end state: every node's fate carried out, every pod running again."""
    names = {n["metadata"]["name"]: n for n in nodes(api)}
    gone = DRIFTED + EMPTY + MANUAL + GRACE
    drift_nodes = [n for n in names.values()
                   if (n["metadata"].get("labels") or {}).get(labels.NODEPOOL_LABEL) == "drift"]
    return (not any(n in names for n in gone) and all(k in names for k in KEEP) and len(drift_nodes) == len(DRIFTED)
            and not any(n["metadata"].get("deletionTimestamp") for n in names.values())
            and all(running_pods(api, app) == spec[1] for app, spec in APPS.items()))


def instances(ec2: Any) -> list[dict[str, Any]]:
    out = []
    for page in ec2.get_paginator("describe_instances").paginate():
        for res in page["Reservations"]:
            out += res["Instances"]
    return out


def tainted(node: dict[str, Any]) -> bool:
    return any(t.get("key") == labels.DISRUPTED_TAINT_KEY for t in (node.get("spec") or {}).get("taints") or [])


def pending_audit(ledger: Ledger, now: float | None = None) -> dict[str, Any]:
    """The simulator ledger's clock of unbound pods: the pods that waited longer than the bound the run
    set (named, longest first), and the longest wait (wall seconds; `now` default: the world's monotonic clock)."""
    late = late_pods(ledger, now)
    return {"podsPendingPastBound": len(late), "podsPendingPast": late,
            "podPendingLongestSeconds": round(ledger.longest_wait(now), 3),
            "pendingBoundSeconds": ledger.pending_bound_seconds}


def audit(api: Any, ec2: Any, ledger: Ledger) -> dict[str, Any]:
    """Every invariant of the chaos suite, measured (the test asserts on the numbers); `ledger` is the
    simulator's."""
    live_nodes = nodes(api)
    claims = node_claims(api)
    all_instances = instances(ec2)
    alive = [i for i in all_instances if i["State"]["Name"] in ("pending", "running")]
    names = {n["metadata"]["name"]: n for n in live_nodes}
    return {
        "nodes": sorted(names),
        "leakedInstances": sorted(audit_counts.leaked_instances(alive, live_nodes, claims)),
        "nodesWithoutInstance": sorted(n for n, node in names.items() if (node.get("spec") or {}).get(
            "providerID", "").rsplit("/", 1)[-1] not in {i["InstanceId"] for i in alive}),
        "stuckFinalizers": sorted(o.split("/", 1)[1] for o in audit_counts.stuck_finalizers(live_nodes, claims)),
        "duplicateLaunches": audit_counts.duplicate_launches(all_instances),
        "replacementLaunches": audit_counts.our_launches(all_instances),
        "keptTouched": sorted(k for k in KEEP if k not in names or tainted(names[k])),
        "nodeClaims": len(claims),
        **pending_audit(ledger),
    }
