"""Builds the planner/disruption activities from the worker's shared clients (worker.ACTIVITY_FACTORIES)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from activities.candidates import CandidateActivities
from activities.events import EventActivities
from activities.planning_runner import PlanningActivities
from activities.provisioning import ProvisioningActivities
from api.catalog import load_catalog, load_default_catalog


def disruption_activities(deps: Any) -> list[Callable[..., Any]]:
    """`deps` is worker.Deps: settings.catalog_path picks the catalog, settings.extra["ami_id"] the AMI."""
    from kubernetes import client as k8s

    extra = deps.settings.extra
    path = getattr(deps.settings, "catalog_path", None)
    catalog = load_catalog(path) if path else load_default_catalog()
    core = k8s.CoreV1Api(deps.kube_api)
    custom = k8s.CustomObjectsApi(deps.kube_api)
    events = EventActivities(core)
    planning = PlanningActivities(deps.kube_api, deps.temporal, catalog, events)
    provisioning = ProvisioningActivities(custom, core, deps.ec2, catalog, ami_id=extra.get("ami_id"))
    candidates = CandidateActivities(core, deps.temporal)
    return [
        planning.plan_pass, planning.validate_command,
        provisioning.launch_replacement, provisioning.replacement_status, provisioning.delete_replacement,
        candidates.taint_candidates, candidates.untaint_candidates, candidates.start_terminations,
        candidates.await_terminations,
        events.record_events,
    ]
