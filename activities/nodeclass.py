"""Resolving every EC2NodeClass against EC2, SSM and IAM and writing its status (Karpenter's nodeclass controller).

One activity, run by NodeClassWorkflow every minute: per class, read the SSM parameters of its AMI alias,
DescribeImages / DescribeSubnets / DescribeSecurityGroups per selector term, the instance profile of its role,
then `api.nodeclass_resolution.resolve_status` decides status and conditions. The class gets status (amis,
subnets, securityGroups, instanceProfile, conditions), its hash annotations, and a Warning Event when it
becomes (or stays, for a new reason) not Ready. Then the NodeClaims of the classes resolved Ready get their
Drifted condition set or cleared (activities/nodeclass_drift.py). Each class carries Karpenter's finalizer; a
deleted class is not resolved but finalized: its NodeClaims waited for, its launch templates deleted
(activities/nodeclass_finalizer.py).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from temporalio import activity

from activities.capacity_block_expiry import delete_expiring
from activities.heartbeat import heartbeating
from activities.launch_templates import LaunchTemplates
from activities.nodeclass_drift import DriftMarker
from activities.nodeclass_finalizer import NodeClassFinalizer, deleting
from api.capacity_reservations import queries as reservation_queries
from api.capacity_reservations import resolve as resolve_reservations
from api.ec2nodeclass import READY, EC2NodeClass, load_ec2nodeclass
from api.ec2nodeclass_validation import validate_ec2nodeclass
from api.meta import Condition
from api.nodeclass_launch import instance_profile_name
from api.nodeclass_resolution import (
    Resolution,
    ami_queries,
    resolve_status,
    security_group_queries,
    ssm_parameter_paths,
    subnet_queries,
    with_capacity_reservations_ready,
)
from contracts.nodeclass import NodeClassInput, NodeClassOutcome, NodeClassResult
from gateways.ec2 import CloudProvider, FleetCloud, cloud_provider
from gateways.kube import KubeClient, Obj

log = logging.getLogger(__name__)

# Describe* errors that mean "this term matches nothing" rather than "try again".
NOT_FOUND_CODES = {"InvalidAMIID.NotFound", "InvalidAMIID.Malformed", "InvalidSubnetID.NotFound",
                   "InvalidGroup.NotFound", "InvalidGroupId.Malformed", "InvalidSubnetID.Malformed",
                   "InvalidCapacityReservationId.NotFound", "InvalidCapacityReservationId.Malformed"}
NOT_READY_REASON = "NodeClassNotReady"


def error_code(exc: BaseException) -> str | None:
    """The AWS error code of a botocore ClientError (None for anything else)."""
    return (getattr(exc, "response", None) or {}).get("Error", {}).get("Code")


class NodeClassActivities:
    """Clients come in: the Kubernetes gateway, EC2, SSM, and IAM (optional: without it, a `role`'s instance
    profile is named as nodeflow would create it, but not created)."""

    def __init__(self, kube: KubeClient, ec2: CloudProvider | Any, ssm: Any, iam: Any = None,
                 cluster_name: str | None = None, region: str | None = None,
                 clock: Callable[[], datetime] | None = None, templates: LaunchTemplates | None = None) -> None:
        self._kube = kube
        self._ec2 = cloud_provider(ec2)
        if templates is None and isinstance(self._ec2, FleetCloud):
            templates = LaunchTemplates(self._ec2, cluster_name or "")
        self._finalizer = NodeClassFinalizer(kube, templates)
        self._ssm = ssm
        self._iam = iam
        self._cluster = cluster_name or "nodeflow"
        self._region = region or self._ec2.region or "us-east-1"
        self._clock = clock or (lambda: datetime.now(UTC))

    @activity.defn(name="nodeclass_reconcile")
    async def reconcile(self, inp: NodeClassInput) -> NodeClassResult:
        return await heartbeating(asyncio.to_thread(self.reconcile_all, inp))

    def reconcile_all(self, inp: NodeClassInput) -> NodeClassResult:
        """Resolve and write every EC2NodeClass (or those named), each with its finalizer; a deleted one is finalized
        instead (activities/nodeclass_finalizer.py). A failing class does not stop the others, and fails the attempt
        afterwards (resolution is idempotent, so the retry redoes all)."""
        objs = [o for o in self._kube.list_node_classes()
                if not inp.names or (o.get("metadata") or {}).get("name") in inp.names]
        if not objs:
            return NodeClassResult()
        k8s_version = self._kube.server_version()
        out, failed, ready = [], [], {}
        for obj in objs:
            try:
                if deleting(obj):  # not resolved: it waits for its NodeClaims, then its templates go
                    self._finalizer.finalize(obj)
                    continue
                self._finalizer.ensure(obj)
                outcome, resolved = self._reconcile(obj, k8s_version)
            except Exception as exc:  # the others still get their status; then the activity retries
                log.warning("EC2NodeClass %s not resolved: %s", obj["metadata"].get("name"), exc)
                failed.append(exc)
                continue
            out.append(outcome)
            if outcome.ready:
                ready[outcome.name] = resolved
        drifted = DriftMarker(self._kube).mark(ready, self._clock())  # the claims of the classes resolved Ready
        reservations = [r for nc in ready.values() for r in nc.status.capacity_reservations or ()]
        delete_expiring(self._kube, reservations)  # capacity blocks about to end (§16.4)
        if failed:
            raise failed[0]
        return NodeClassResult(classes=out, drifted=dict(drifted))

    def reconcile_one(self, obj: Obj, k8s_version: str) -> NodeClassOutcome:
        return self._reconcile(obj, k8s_version)[0]

    def _reconcile(self, obj: Obj, k8s_version: str) -> tuple[NodeClassOutcome, EC2NodeClass]:
        """Resolve and write one class; its outcome and the class as written (status, hash annotations)."""
        nc = load_ec2nodeclass(obj)
        problems = validate_ec2nodeclass(obj)
        if problems:
            res = self._invalid(nc, problems)
        else:
            try:
                res = self.resolve(nc, k8s_version)
            except ValueError as exc:  # e.g. an alias family without parameters for this Kubernetes version
                res = self._invalid(nc, [str(exc)])
        self._write(nc, res)
        ready = next(c for c in res.status.conditions or () if c.type == READY)
        written = nc.model_copy(deep=True)
        written.status = res.status
        written.metadata.annotations = {**(nc.metadata.annotations or {}), **nc.hash_annotations()}
        return NodeClassOutcome(name=nc.name, ready=ready.status == "True", message=ready.message or "",
                                unmatched=res.unmatched, amis=len(res.status.amis or ()),
                                subnets=len(res.status.subnets or ()),
                                security_groups=len(res.status.security_groups or ())), written

    def resolve(self, nc: EC2NodeClass, k8s_version: str) -> Resolution:
        """The class's status from EC2's, SSM's and IAM's answers now."""
        ssm_values = self._ssm_values(ssm_parameter_paths(nc, k8s_version))
        images = {q.term: self._describe("describe_images", "Images", q.params)
                  for q in ami_queries(nc, k8s_version, ssm_values)}
        subnets = {q.term: self._describe("describe_subnets", "Subnets", q.params) for q in subnet_queries(nc)}
        groups = {q.term: self._describe("describe_security_groups", "SecurityGroups", q.params)
                  for q in security_group_queries(nc)}
        res = resolve_status(nc, k8s_version=k8s_version, ssm_values=ssm_values, images_by_term=images,
                             subnets_by_term=subnets, security_groups_by_term=groups,
                             instance_profile=self._instance_profile(nc), now=self._clock())
        if nc.spec.capacity_reservation_selector_terms:  # Karpenter's capacityreservation.go: each query's answer
            answers = [self._describe("describe_capacity_reservations", "CapacityReservations", q.params)
                       for q in reservation_queries(nc.spec.capacity_reservation_selector_terms)]
            res.status.capacity_reservations = resolve_reservations(answers, self._clock())
        # reached only when every term was answered (an EC2 error raises: the class's status stays as it was)
        res.status.conditions = with_capacity_reservations_ready(res.status.conditions or [], nc.status.conditions,
                                                                 self._clock())
        return res

    def _invalid(self, nc: EC2NodeClass, problems: list[str]) -> Resolution:
        """Not Ready, naming the problems; the last resolved lists are kept (launches are blocked anyway)."""
        message = "; ".join(problems)[:1024]
        before = nc.condition(READY)
        since = before.last_transition_time if before is not None and before.status == "False" else self._clock()
        status = nc.status.model_copy()
        status.conditions = [Condition(type=READY, status="False", reason="ValidationFailed", message=message,
                                       lastTransitionTime=since)]
        return Resolution(status=status, unmatched=problems)

    # ---- AWS ------------------------------------------------------------------------------------------------

    def _ssm_values(self, paths: list[str]) -> dict[str, str]:
        """path -> value of each SSM parameter that exists."""
        out: dict[str, str] = {}
        for path in paths:
            try:
                out[path] = self._ssm.get_parameter(Name=path)["Parameter"]["Value"]
            except Exception as exc:
                if error_code(exc) not in ("ParameterNotFound", "ParameterVersionNotFound"):
                    raise
        return out

    def _describe(self, method: str, key: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        """Every page of one Describe* call; an id that does not exist matches nothing."""
        out: list[dict[str, Any]] = []
        token: str | None = None
        while True:
            try:
                resp = self._ec2.describe(method, {**params, **({"NextToken": token} if token else {})})
            except Exception as exc:
                if error_code(exc) in NOT_FOUND_CODES:
                    return out
                raise
            out += resp.get(key) or []
            token = resp.get("NextToken")
            if not token:
                return out

    def _instance_profile(self, nc: EC2NodeClass) -> str | None:
        """spec.instanceProfile as written; for spec.role the profile nodeflow makes (when it has IAM)."""
        if nc.spec.instance_profile:
            return nc.spec.instance_profile
        if not nc.spec.role:
            return None
        name = instance_profile_name(self._cluster, self._region, nc.name)
        return name if self._iam is None else self._ensure_profile(name, nc.spec.role, nc.name)

    def _ensure_profile(self, name: str, role: str, node_class: str) -> str | None:
        """The instance profile `name` holding exactly `role`, created when missing; None when the role does not
        exist (InstanceProfileReady stays False and says so)."""
        try:
            profile = self._iam.get_instance_profile(InstanceProfileName=name)["InstanceProfile"]
        except Exception as exc:
            if error_code(exc) != "NoSuchEntity":
                raise
            tags = [{"Key": f"kubernetes.io/cluster/{self._cluster}", "Value": "owned"},
                    {"Key": "karpenter.k8s.aws/ec2nodeclass", "Value": node_class},
                    {"Key": "topology.kubernetes.io/region", "Value": self._region}]
            profile = self._iam.create_instance_profile(InstanceProfileName=name, Tags=tags)["InstanceProfile"]
        roles = [r["RoleName"] for r in profile.get("Roles") or []]
        if roles == [role]:
            return name
        for other in roles:
            self._iam.remove_role_from_instance_profile(InstanceProfileName=name, RoleName=other)
        try:
            self._iam.add_role_to_instance_profile(InstanceProfileName=name, RoleName=role)
        except Exception as exc:
            if error_code(exc) != "NoSuchEntity":
                raise
            log.warning("EC2NodeClass %s: role %s does not exist", node_class, role)
            return None
        return name

    # ---- Kubernetes -----------------------------------------------------------------------------------------

    def _write(self, nc: EC2NodeClass, res: Resolution) -> None:
        """Status, hash annotations, and an Event when the class is not Ready for a new reason.

        Each condition carries the generation it was resolved for (`observedGeneration`, as Karpenter's status
        conditions do), so a reader knows whether a spec change has been resolved yet (a fleet rollout waits on
        it: docs/fleet.md)."""
        for condition in res.status.conditions or ():
            condition.observed_generation = nc.metadata.generation
        self._kube.patch_node_class_status(nc.name, {"status": res.status.to_dict()})
        wanted = nc.hash_annotations()
        if any(nc.annotation(k) != v for k, v in wanted.items()):
            self._kube.patch_node_class(nc.name, {"metadata": {"annotations": wanted}})
        before = nc.condition(READY)
        after = next(c for c in res.status.conditions or () if c.type == READY)
        if after.status != "True" and (before is None or (before.status, before.message) !=
                                       (after.status, after.message)):
            self._kube.event("EC2NodeClass", {"metadata": {"uid": nc.metadata.uid}}, nc.name, NOT_READY_REASON,
                             after.message or "not ready", type_="Warning")
