"""The EC2NodeClass's finalizer, as Karpenter's nodeclass controller keeps it (aws/karpenter-provider-aws
`pkg/controllers/nodeclass/controller.go`: `Reconcile` adds `karpenter.k8s.aws/termination`, `finalize` removes it).

Every class the resolution sees gets the finalizer. A class being deleted is not resolved: while NodeClaims of it
remain it waits (a Normal `WaitingOnNodeClaimTermination` Event naming them; their launches and terminations still
read the class), then its launch templates are deleted (found by their class and cluster tags,
activities/launch_templates.py) and the finalizer comes off. Run by the NodeClassWorkflow's activity every minute;
each step is idempotent, and a failed one leaves the finalizer for the next run.
"""

from __future__ import annotations

import logging

from activities.events import recorder_for
from activities.launch_templates import LaunchTemplates
from api import events
from api.ec2nodeclass import claims_of_class
from api.events import EventReason
from api.launch_templates import NODECLASS_FINALIZER
from contracts.disruption import EventSpec
from gateways.kube import KubeClient, Obj

log = logging.getLogger(__name__)


def _meta(obj: Obj) -> Obj:
    return obj.get("metadata") or {}


def deleting(obj: Obj) -> bool:
    return bool(_meta(obj).get("deletionTimestamp"))


class NodeClassFinalizer:
    """Adds and, once the class's NodeClaims are gone and its templates deleted, removes the finalizer."""

    def __init__(self, kube: KubeClient, templates: LaunchTemplates | None) -> None:
        self._kube = kube
        self._templates = templates  # None: no EC2 that makes templates (nothing to delete)

    def ensure(self, obj: Obj) -> None:
        """The finalizer on a class not being deleted (a merge patch guarded by the resourceVersion)."""
        finalizers = list(_meta(obj).get("finalizers") or [])
        if NODECLASS_FINALIZER in finalizers or deleting(obj):
            return
        self._patch(obj, [*finalizers, NODECLASS_FINALIZER])

    def finalize(self, obj: Obj) -> bool:
        """One step of a deleted class's finalization; True when the finalizer is off (or was never on)."""
        meta = _meta(obj)
        finalizers = list(meta.get("finalizers") or [])
        if NODECLASS_FINALIZER not in finalizers:
            return True
        waiting = claims_of_class(self._kube.list_node_claims(), meta["name"])
        if waiting:
            recorder_for(self._kube).publish(EventSpec(
                kind="EC2NodeClass", name=meta["name"], uid=meta.get("uid"),
                reason=EventReason.WAITING_ON_NODECLAIM_TERMINATION, message=events.waiting_on_nodeclaims(waiting)))
            return False
        if self._templates is not None:
            deleted = self._templates.delete_class(meta["name"])
            if deleted:
                log.info("EC2NodeClass %s deleted: its launch templates %s deleted", meta["name"],
                         events.pretty_names(deleted))
        self._patch(obj, [f for f in finalizers if f != NODECLASS_FINALIZER])
        return True

    def _patch(self, obj: Obj, finalizers: list[str]) -> None:
        """Raises gateways.kube.Conflict when the class changed since it was read (the next run reads again)."""
        meta = _meta(obj)
        self._kube.patch_node_class(meta["name"], {"metadata": {"finalizers": finalizers or None,
                                                                "resourceVersion": meta.get("resourceVersion")}})
