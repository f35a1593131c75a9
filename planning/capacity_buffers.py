"""CapacityBuffer -> virtual pods (docs/semantics.md §20): the headroom a buffer keeps, as pending pods of its shape.

Karpenter v1.14 (pkg/controllers/capacitybuffer, pkg/state/virtualpods) resolves each buffer's chunk shape from its
PodTemplate or its workload's pod template, counts its chunks, and adds that many virtual pods to the pending pods
of every provisioning pass and every disruption simulation. They are never created, bound, nominated or evicted:
they only make the simulation keep (or launch) room of their shape. Pure: the objects come from the snapshot.

Chunks, as Karpenter's computeReplicas: `replicas` and `percentage` (of the workload's `spec.replicas`, rounded up,
at least 1) combine by their maximum; `limits` caps it at floor(limit / one chunk's request) over every resource both
name; with neither count set, `limits` alone decides; with nothing set, no chunk.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from api import capacity_buffer as cb
from api.quantity import parse_quantity
from planning.pod_requests import pod_requests

Obj = dict[str, Any]
WORKLOAD_GROUPS = ("", "apps")  # an empty apiGroup means apps for the workload kinds (Karpenter's ResolveScalableRef)


@dataclass(frozen=True, slots=True)
class Resolution:
    """A buffer resolved against the cluster: its chunk shape and count, and the ReadyForProvisioning condition."""

    buffer: cb.CapacityBuffer
    ready: bool
    reason: str
    message: str
    replicas: int = 0
    template: Obj = field(default_factory=dict)  # the PodTemplateSpec (metadata, spec) of one chunk
    pod_template: str | None = None  # status.podTemplateRef.name (podTemplateRef only)
    pod_template_generation: int | None = None

    @property
    def active(self) -> bool:
        """Ready, with chunks, and meant for this autoscaler (the active-capacity strategy)."""
        return self.ready and self.replicas > 0 and self.buffer.spec.provisioning_strategy == cb.ACTIVE_CAPACITY


def _requests(spec: Mapping[str, Any]) -> dict[str, float]:
    """One chunk's requests, by resource name, as the scheduler counts them; extended resources summed over the
    containers."""
    req = pod_requests(spec)
    out: dict[str, float] = {"cpu": req.cpu, "memory": float(req.mem), "ephemeral-storage": float(req.eph)}
    for c in spec.get("containers") or ():
        for key, value in ((c.get("resources") or {}).get("requests") or {}).items():
            if key not in ("cpu", "memory", "ephemeral-storage"):
                out[key] = out.get(key, 0.0) + float(parse_quantity(value))
    return {k: v for k, v in out.items() if v > 0}


def limit_replicas(limits: Mapping[str, Any], spec: Mapping[str, Any]) -> int | None:
    """How many chunks fit within `limits` (None: no limit names a resource a chunk requests)."""
    requests = _requests(spec)
    fits = [math.floor(float(parse_quantity(limit)) / requests[name] + 1e-9)
            for name, limit in limits.items() if requests.get(name)]
    return min(min(fits), 2**31 - 1) if fits else None


def percentage_replicas(workload_replicas: int, percentage: int) -> int:
    """ceil(replicas x percentage / 100), at least 1 when both are positive."""
    n = math.ceil(workload_replicas * percentage / 100)
    return max(n, 1) if workload_replicas > 0 and percentage > 0 else n


def desired_replicas(spec: cb.CapacityBufferSpec, pod_spec: Mapping[str, Any], workload_replicas: int | None) -> int:
    """The chunk count (Karpenter's computeReplicas; see the module docstring)."""
    counts = [spec.replicas] if spec.replicas is not None else []
    if spec.percentage is not None and workload_replicas:
        counts.append(percentage_replicas(workload_replicas, spec.percentage))
    capped = limit_replicas(spec.limits, pod_spec) if spec.limits else None
    if capped is None:
        return max(counts) if counts else 0
    return min(max(counts), capped) if counts else capped


def _find(objects: Iterable[Obj], kinds: Iterable[str], namespace: str, name: str) -> Obj | None:
    wanted = set(kinds)
    for o in objects:
        meta = o.get("metadata") or {}
        if o.get("kind") in wanted and meta.get("name") == name and (meta.get("namespace") or "default") == namespace:
            return o
    return None


def resolve(buffer: cb.CapacityBuffer, objects: list[Obj]) -> Resolution:
    """The buffer's shape and chunk count from the PodTemplate or workload it names, or why not (the reasons of
    Karpenter's capacitybuffer controller)."""
    spec, ns = buffer.spec, buffer.namespace
    if spec.pod_template_ref is not None:
        pt = _find(objects, ("PodTemplate",), ns, spec.pod_template_ref.name)
        if pt is None:
            return Resolution(buffer, False, cb.REASON_POD_TEMPLATE_NOT_FOUND,
                              f'podtemplates "{spec.pod_template_ref.name}" not found')
        template = pt.get("template") or {}
        meta = pt.get("metadata") or {}
        return Resolution(buffer, True, cb.REASON_RESOLVED, "Pod template resolved successfully",
                          desired_replicas(spec, template.get("spec") or {}, None), template, meta.get("name"),
                          int(meta.get("generation") or 0))
    if spec.scalable_ref is not None:
        ref = spec.scalable_ref
        if ref.api_group not in WORKLOAD_GROUPS or ref.kind not in cb.SCALABLE_KINDS:
            return Resolution(buffer, False, cb.REASON_RESOLUTION_FAILED,
                              f"unsupported scalableRef {ref.api_group or 'apps'}/{ref.kind}")
        workload = _find(objects, (ref.kind,), ns, ref.name)
        if workload is None:
            return Resolution(buffer, False, cb.REASON_SCALABLE_REF_NOT_FOUND,
                              f'{ref.kind.lower()}s.apps "{ref.name}" not found')
        wspec = workload.get("spec") or {}
        template = wspec.get("template") or {}
        count = wspec.get("replicas")
        return Resolution(buffer, True, cb.REASON_RESOLVED, "Pod template resolved successfully",
                          desired_replicas(spec, template.get("spec") or {}, 1 if count is None else int(count)),
                          template)
    return Resolution(buffer, False, cb.REASON_RESOLUTION_FAILED, "Neither podTemplateRef nor scalableRef is set")


def virtual_pods(res: Resolution) -> list[Obj]:
    """`res.replicas` placeholder pods of the buffer's shape, pending (PodScheduled=False/Unschedulable), at the
    lowest priority, with the template's labels (topology spread and affinity see them) and Karpenter's
    annotations; volumes that need a claim are dropped (there is none), as is any nodeName."""
    if not res.active:
        return []
    buf = res.buffer
    spec = _sanitized(res.template.get("spec") or {})
    labels = dict((res.template.get("metadata") or {}).get("labels") or {})
    annotations = {cb.FAKE_POD_ANNOTATION: "true", cb.BUFFER_NAME_ANNOTATION: buf.name,
                   cb.BUFFER_NAMESPACE_ANNOTATION: buf.namespace}
    return [{
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": f"capacity-buffer-{buf.name}-{i}", "namespace": buf.namespace, "uid": f"{buf.uid}-{i}",
                     "labels": labels, "annotations": dict(annotations)},
        "spec": spec,
        "status": {"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]},
    } for i in range(1, res.replicas + 1)]


def _sanitized(spec: Mapping[str, Any]) -> Obj:
    out = copy.deepcopy(dict(spec))
    out.pop("nodeName", None)
    out["priority"] = cb.VIRTUAL_POD_PRIORITY
    dropped = {v.get("name") for v in out.get("volumes") or () if "persistentVolumeClaim" in v or "ephemeral" in v}
    if dropped:
        out["volumes"] = [v for v in out["volumes"] if v.get("name") not in dropped]
        for key in ("containers", "initContainers"):
            for c in out.get(key) or ():
                c["volumeMounts"] = [m for m in c.get("volumeMounts") or () if m.get("name") not in dropped]
    return out


def buffers(objects: Iterable[Obj]) -> tuple[list[cb.CapacityBuffer], list[tuple[Obj, str]]]:
    """The CapacityBuffers among `objects`, and the ones that do not parse with why (the API server refuses them;
    a snapshot file may still hold one)."""
    good: list[cb.CapacityBuffer] = []
    bad: list[tuple[Obj, str]] = []
    for o in objects:
        if o.get("kind") != cb.KIND:
            continue
        try:
            good.append(cb.CapacityBuffer.model_validate(o))
        except ValidationError as exc:
            bad.append((o, str(exc.errors()[0].get("msg", exc))))
    return good, bad


def resolve_all(objects: Iterable[Obj]) -> list[Resolution]:
    """Every buffer of the snapshot, resolved, in namespace/name order."""
    objs = list(objects)
    found, _ = buffers(objs)
    return [resolve(b, objs) for b in sorted(found, key=lambda b: b.key)]


def snapshot_virtual_pods(objects: Iterable[Obj]) -> list[Obj]:
    """The virtual pods of every active buffer among `objects` (a snapshot's `others`)."""
    return [pod for res in resolve_all(objects) for pod in virtual_pods(res)]


# ---- status (what Karpenter's capacitybuffer controller and provisioner write) -------------------------------

def ready_condition(res: Resolution) -> Obj:
    """ReadyForProvisioning: True once the shape resolved, else False with why."""
    return {"type": cb.READY_FOR_PROVISIONING, "status": "True" if res.ready else "False", "reason": res.reason,
            "message": res.message, "observedGeneration": res.buffer.generation}


def provisioning_condition(res: Resolution, existing: int | None, new: int = 0, failed: int = 0) -> Obj | None:
    """Provisioning after a provisioning simulation placed the buffer's chunks: `existing` on nodes already there
    (or launching), `new` on NodeClaims to launch, `failed` nowhere; None when nothing is known yet (the buffer's
    pods were not simulated) and the condition stays as it is. Karpenter's computeProvisioningCondition."""
    def cond(status: str, reason: str, message: str) -> Obj:
        return {"type": cb.PROVISIONING, "status": status, "reason": reason, "message": message,
                "observedGeneration": res.buffer.generation}

    if not res.ready:
        return cond("False", cb.REASON_NOT_READY, "Buffer is not ReadyForProvisioning")
    if res.replicas == 0:
        return cond("False", cb.REASON_EMPTY, "Buffer has zero desired replicas")
    if existing is None:
        return None
    if new or failed:
        return cond("False", cb.REASON_REQUIRES_NEW,
                    f"{new}/{res.replicas} virtual pods required new capacity, {failed} failed")
    if existing == res.replicas:
        return cond("True", cb.REASON_FITS_EXISTING, f"All {res.replicas} virtual pods fit on existing capacity")
    return None


def status_body(res: Resolution, provisioning: Obj | None, now: str) -> Obj:
    """The buffer's whole status as it should be: the conditions keep their lastTransitionTime while their status
    stays (metav1 SetStatusCondition), so an unchanged buffer yields an unchanged body and no write."""
    old = {c.type: c for c in res.buffer.status.conditions}
    conditions = []
    for cond in (ready_condition(res), provisioning):
        if cond is None:
            kept = old.get(cb.PROVISIONING)
            if kept is not None:
                conditions.append(kept.model_dump(by_alias=True, exclude_none=True))
            continue
        prev = old.get(cond["type"])
        since = prev.last_transition_time if prev is not None and prev.status == cond["status"] else None
        conditions.append({**cond, "lastTransitionTime": since or now})
    body: Obj = {"replicas": res.replicas if res.ready else None, "conditions": conditions,
                 "provisioningStrategy": res.buffer.spec.provisioning_strategy,
                 "podTemplateRef": {"name": res.pod_template} if res.pod_template else None,
                 "podTemplateGeneration": res.pod_template_generation}
    return body


def status_changed(res: Resolution, body: Obj) -> bool:
    """True when `body` differs from the buffer's stored status (a write is owed)."""
    stored = res.buffer.status.model_dump(by_alias=True, exclude_none=True)
    stored.pop("conditions", None)
    wanted = {k: v for k, v in body.items() if v is not None and k != "conditions"}
    stored_conditions = [c.model_dump(by_alias=True, exclude_none=True) for c in res.buffer.status.conditions]
    return stored != wanted or stored_conditions != body["conditions"]
