"""The soak's churn driver: what users and AWS do to the demo world, seeded, through production interfaces only
(the Kubernetes API over HTTP, SQS on moto). Each kind of churn comes round at its own period (jittered):

- scale: a Deployment scaled up or down (pending pods go to the provisioner, surplus pods leave nodes empty);
- drift: a NodePool template changed (a label), so its nodes drift and are replaced under its budget;
- interruption: an EC2 spot interruption warning on the queue for a live spot node;
- delete: `kubectl delete node` of a random node (the deletion watcher starts its termination);
- expiration: the batch pool's expireAfter is short for the whole run (its nodes keep expiring).
The simulator's 1% API fault rate is switched on and off by the soak itself (bench/soak.py).
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client as k8s

from api import labels as L
from api.interruption_events import spot_warning
from api.provider_id import instance_id_from_provider_id

# app -> replicas in the demo world; scaled within [base / 2, base * 1.5]
SCALABLE = {"web": 24, "api": 10, "reports": 6, "crawler": 8}
DRIFT_POOLS = ("general", "batch")
EXPIRING_POOL, SHORT_EXPIRY, LONG_EXPIRY = "batch", "6m", "720h"
REV_LABEL = "nodeflow.dev/soak-rev"
# kind -> (first at, then every) seconds of wall time
PERIODS = {"scale": (20.0, 45.0), "interruption": (40.0, 180.0), "delete": (60.0, 240.0), "drift": (90.0, 480.0)}


def retry(fn: Callable[..., Any], *args: Any, attempts: int = 40, **kw: Any) -> Any:
    """A Kubernetes call through the injected 429/500/409 faults, retried as any client would."""
    for attempt in range(attempts):
        try:
            return fn(*args, **kw)
        except k8s.ApiException as exc:
            if exc.status not in (409, 429, 500, 503) or attempt == attempts - 1:
                raise
            time.sleep(0.2)
    raise AssertionError("unreachable")


def _live(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o for o in objs if not (o.get("metadata") or {}).get("deletionTimestamp")]


@dataclass
class Churn:
    api: Any  # kubernetes ApiClient on the simulator
    sqs: Any
    queue_url: str
    rng: random.Random
    counts: Counter[str] = field(default_factory=Counter)
    log: list[str] = field(default_factory=list)
    due: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.core, self.apps = k8s.CoreV1Api(self.api), k8s.AppsV1Api(self.api)
        self.custom = k8s.CustomObjectsApi(self.api)

    def start(self, now: float) -> None:
        self.due = {k: now + first for k, (first, _) in PERIODS.items()}
        self.set_expiry(SHORT_EXPIRY)
        self.counts["expiration"] += 1

    def step(self, now: float) -> list[str]:
        """Everything due by `now`; returns what was done (one line each)."""
        done = []
        for kind, at in sorted(self.due.items(), key=lambda kv: kv[1]):
            if at > now:
                continue
            line = getattr(self, kind)()
            self.due[kind] = now + PERIODS[kind][1] * self.rng.uniform(0.8, 1.2)
            if line:
                self.counts[kind] += 1
                done.append(line)
        self.log += done
        return done

    def nodes(self) -> list[dict[str, Any]]:
        return self.api.sanitize_for_serialization(retry(self.core.list_node).items)

    def scale(self) -> str:
        app = self.rng.choice(sorted(SCALABLE))
        base = SCALABLE[app]
        replicas = self.rng.randint(max(1, base // 2), base + base // 2)
        retry(self.apps.patch_namespaced_deployment_scale, app, "default", {"spec": {"replicas": replicas}})
        return f"scale {app} to {replicas}"

    def drift(self) -> str:
        pool = DRIFT_POOLS[self.counts["drift"] % len(DRIFT_POOLS)]
        rev = str(self.counts["drift"] + 1)
        body = {"spec": {"template": {"metadata": {"labels": {REV_LABEL: rev}}}}}
        retry(self.custom.patch_cluster_custom_object, "karpenter.sh", "v1", "nodepools", pool, body)
        return f"drift NodePool {pool} (template label {REV_LABEL}={rev})"

    def set_expiry(self, expire_after: str) -> None:
        body = {"spec": {"template": {"spec": {"expireAfter": expire_after}}}}
        retry(self.custom.patch_cluster_custom_object, "karpenter.sh", "v1", "nodepools", EXPIRING_POOL, body)

    def interruption(self) -> str:
        spot = [n for n in _live(self.nodes())
                if (n["metadata"].get("labels") or {}).get(L.CAPACITY_TYPE_LABEL) == "spot"]
        iids = [(n["metadata"]["name"], instance_id_from_provider_id((n.get("spec") or {}).get("providerID")))
                for n in spot]
        iids = [(name, iid) for name, iid in iids if iid]
        if not iids:
            return ""
        name, iid = self.rng.choice(iids)
        self.sqs.send_message(QueueUrl=self.queue_url, MessageBody=spot_warning(iid))
        return f"spot interruption warning for {name} ({iid})"

    def delete(self) -> str:
        pinned = self.do_not_disrupt_nodes()
        names = sorted(n["metadata"]["name"] for n in _live(self.nodes()) if n["metadata"]["name"] not in pinned)
        if not names:
            return ""
        name = self.rng.choice(names)
        try:
            retry(self.core.delete_node, name)
        except k8s.ApiException as exc:
            if exc.status != 404:
                raise
            return ""
        return f"delete node {name}"

    def do_not_disrupt_nodes(self) -> set[str]:
        """Nodes running a do-not-disrupt pod: a user deleting one waits out its grace period, left alone here."""
        pods = retry(self.core.list_pod_for_all_namespaces).items
        return {p.spec.node_name for p in pods if p.spec.node_name
                and (p.metadata.annotations or {}).get(L.DO_NOT_DISRUPT_ANNOTATION) == "true"}

    def quiesce(self) -> None:
        """No more churn: the expiring pool gets its long expireAfter back."""
        self.due = {}
        self.set_expiry(LONG_EXPIRY)
