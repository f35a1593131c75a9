"""A random stream of changes to a simulated cluster (cache and view tests: whatever the stream, what the watch
cache holds must equal a fresh LIST)."""

from __future__ import annotations

import random
from typing import Any

from kubernetes import client as kube
from kubernetes.client.rest import ApiException

from support.sim_objects import node, nodeclaim, pdb, pod


def random_change(rng: random.Random, api: Any, i: int) -> None:
    """One create, update or delete of a Node, Pod, NodeClaim or PDB; a 404/409 race is just skipped."""
    core, custom, policy = kube.CoreV1Api(api), kube.CustomObjectsApi(api), kube.PolicyV1Api(api)
    nodes = [n.metadata.name for n in core.list_node().items]
    pods = [p.metadata.name for p in core.list_namespaced_pod("default").items]
    claims = [c["metadata"]["name"] for c in custom.list_cluster_custom_object("karpenter.sh", "v1",
                                                                               "nodeclaims")["items"]]
    pdbs = [b.metadata.name for b in policy.list_namespaced_pod_disruption_budget("default").items]
    label = {"metadata": {"labels": {"step": str(i)}}}
    ops = 2 * [  # creates twice as likely, so the cluster grows while it churns
        lambda: core.create_node(node(f"n{i}")),
        lambda: core.create_namespaced_pod("default", pod(f"p{i}", rng.choice([*nodes, None]), labels={"app": "a"})),
        lambda: custom.create_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", nodeclaim(f"c{i}")),
        lambda: policy.create_namespaced_pod_disruption_budget("default", pdb(f"b{i}", {"app": "a"}, minAvailable=1)),
    ]
    if nodes:
        ops += [lambda: core.patch_node(rng.choice(nodes), label), lambda: core.delete_node(rng.choice(nodes))]
    if pods:
        ops += [lambda: core.patch_namespaced_pod(rng.choice(pods), "default", label),
                lambda: core.delete_namespaced_pod(rng.choice(pods), "default", grace_period_seconds=0)]
    if claims:
        ops += [lambda: custom.patch_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", rng.choice(claims),
                                                           label)]
    if pdbs:
        ops += [lambda: policy.patch_namespaced_pod_disruption_budget(rng.choice(pdbs), "default", label),
                lambda: policy.delete_namespaced_pod_disruption_budget(rng.choice(pdbs), "default")]
    try:
        rng.choice(ops)()
    except ApiException as exc:
        if exc.status not in (404, 409):
            raise
