"""Activities of a fleet rollout (docs/fleet.md).

`fleet_apply` and `fleet_observe` run on each cluster's own task queue, so they are done by that cluster's worker
with its own Kubernetes credentials; `fleet_gate` (a Prometheus query) runs where the FleetRolloutWorkflow runs.
What to write and how to count is decided in planning/fleet/change.py; here only reads and writes.
"""

from __future__ import annotations

import asyncio
import json
import urllib.parse
import urllib.request
from datetime import UTC, datetime
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from api.fleet import FleetChange
from api.fleet_observation import ClusterObservation
from contracts.fleet import ApplyInput, ApplyResult, GateInput, GateResult, ObserveInput
from gateways.kube import KubeClient
from planning.fleet.change import node_class_patch, node_class_state, node_pool_patch, observe_pods, observe_pool
from planning.fleet.progress import judge_prometheus

NOT_FOUND = "FleetTargetNotFound"  # error type: the class or a pool the change names does not exist
GATE_TIMEOUT_SECONDS = 10.0


class FleetActivities:
    def __init__(self, kube: KubeClient) -> None:
        self._kube = kube

    @activity.defn(name="fleet_apply")
    async def apply(self, inp: ApplyInput) -> ApplyResult:
        """Write the change with its record, object by object; a retry writes nothing already written."""
        return await asyncio.to_thread(self._apply, inp)

    @activity.defn(name="fleet_observe")
    async def observe(self, inp: ObserveInput) -> ClusterObservation:
        """Count the target pools' nodes, their drift rollouts and the cluster's pods."""
        return await asyncio.to_thread(self._observe, inp)

    def _apply(self, inp: ApplyInput) -> ApplyResult:
        change = FleetChange.model_validate(inp.change)
        out = ApplyResult()
        if change.node_class is not None:
            name = change.node_class.name
            obj = self._kube.get_node_class(name)
            if obj is None:
                raise ApplicationError(f"EC2NodeClass {name} not found in cluster {inp.cluster}", type=NOT_FOUND,
                                       non_retryable=True)
            self._write(f"ec2nodeclass/{name}", node_class_patch(obj, change, inp.rollout_id, inp.stage),
                        lambda body: self._kube.patch_node_class(name, body), out)
            return out
        for pool in inp.node_pools:
            obj = self._kube.get_node_pool(pool)
            if obj is None:
                raise ApplicationError(f"NodePool {pool} not found in cluster {inp.cluster}", type=NOT_FOUND,
                                       non_retryable=True)
            self._write(f"nodepool/{pool}", node_pool_patch(obj, change, inp.rollout_id, inp.stage),
                        lambda body, pool=pool: self._kube.patch_node_pool(pool, body), out)
        return out

    @staticmethod
    def _write(what: str, patch: dict[str, Any] | None, write: Any, out: ApplyResult) -> None:
        if patch is None:
            out.unchanged.append(what)
            return
        if write(patch) is None:
            raise ApplicationError(f"{what} disappeared while the change was written", type=NOT_FOUND,
                                   non_retryable=True)
        out.changed.append(what)

    def _observe(self, inp: ObserveInput) -> ClusterObservation:
        change = FleetChange.model_validate(inp.change)
        obs = ClusterObservation(cluster=inp.cluster, at=datetime.now(UTC))
        node_class = None
        if change.node_class is not None:
            obs.node_class = change.node_class.name
            node_class = self._kube.get_node_class(change.node_class.name)
            obs.node_class_found = node_class is not None
            obs.node_class_resolved, obs.node_class_ready, obs.node_class_message = node_class_state(node_class)
        for name in inp.node_pools:
            claims = self._kube.list_node_claims(label_selector=f"karpenter.sh/nodepool={name}")
            obs.pools.append(observe_pool(name, self._kube.get_node_pool(name), claims, change, inp.rollout_id,
                                          node_class))
        obs.pods_pending, obs.pods_not_ready, obs.pod_examples = observe_pods(self._kube.list_all_pods())
        return obs


@activity.defn(name="fleet_gate")
async def prometheus_gate(inp: GateInput) -> GateResult:
    """Run the rollout's PromQL gate: it holds when the result is non-empty and every sample is non-zero."""
    return await asyncio.to_thread(_query, inp)


def _query(inp: GateInput) -> GateResult:
    url = f"{inp.url.rstrip('/')}/api/v1/query?{urllib.parse.urlencode({'query': inp.query})}"
    try:
        with urllib.request.urlopen(url, timeout=GATE_TIMEOUT_SECONDS) as resp:  # http(s): the document's pattern
            body = json.loads(resp.read())
    except (OSError, ValueError) as exc:
        return GateResult(ok=False, message=f"Prometheus at {inp.url} did not answer: {exc}")
    ok, message = judge_prometheus(body, inp.query)
    return GateResult(ok=ok, message=message)
