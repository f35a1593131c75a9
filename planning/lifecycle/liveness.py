"""Liveness: a claim whose instance never launched within 5 minutes, or whose Node never registered within 15,
is deleted (its termination then terminates any instance). Karpenter's lifecycle/liveness.go,
docs/karpenter-reference.md §6. Inactive once the claim is Registered."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from api.nodeclaim import LAUNCHED, REGISTERED
from planning.lifecycle.conditions import UNKNOWN, Obj, is_true, status_of, transition_time

LAUNCH_TTL = timedelta(minutes=5)
REGISTRATION_TTL = timedelta(minutes=15)


class LivenessTimeout(StrEnum):
    """Why liveness deletes a claim (Karpenter's karpenter_nodeclaims_disrupted_total reasons)."""

    LAUNCH = "launch_timeout"
    REGISTRATION = "registration_timeout"


def expired(claim: Obj, now: datetime, launch_ttl: timedelta = LAUNCH_TTL,
            registration_ttl: timedelta = REGISTRATION_TTL) -> LivenessTimeout | None:
    """The timeout this claim has run past, if any."""
    if is_true(claim, REGISTERED) or (claim.get("metadata") or {}).get("deletionTimestamp"):
        return None
    if not is_true(claim, LAUNCHED):
        since = transition_time(claim, LAUNCHED)
        return LivenessTimeout.LAUNCH if since is not None and now - since >= launch_ttl else None
    since = transition_time(claim, REGISTERED)
    return LivenessTimeout.REGISTRATION if since is not None and now - since >= registration_ttl else None


def still_launching(claim: Mapping[str, Any], at: datetime) -> bool:
    """Whether a NodeClaim no Node has joined is capacity on its way (docs/architecture.md, ProvisioningWorkflow).
    Not when it is being deleted; not once `Registered` left Unknown (True: its Node is gone; False: registration
    failed for good); not past liveness's launch or registration TTL (`expired` above, Karpenter's
    liveness.go), when Karpenter deletes it: a claim whose Node never came would otherwise hold its pods pending
    for ever."""
    if (claim.get("metadata") or {}).get("deletionTimestamp") or status_of(claim, REGISTERED) != UNKNOWN:
        return False
    return expired(dict(claim), at) is None
