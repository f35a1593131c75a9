"""`ApplicationError.type` values that activities raise and workflows and clients branch on (never on text)."""

from __future__ import annotations

from enum import StrEnum


class ErrorType(StrEnum):
    """One name per failure kind; the values are recorded in histories, so they never change."""

    LAUNCH_FAILED = "LaunchFailed"  # a replacement cannot be launched; retrying will not help
    INVALID_PROVIDER_ID = "InvalidProviderID"
    CANDIDATE_GONE = "CandidateGone"
    TERMINATION_FAILED = "TerminationFailed"
    CANCEL_REJECTED = "CancelRejected"  # a termination's cancel update, refused after it was accepted
    NODE_CLASS_NOT_READY = "NodeClassNotReady"  # the NodePool's EC2NodeClass is missing or not Ready: no launch
    CLUSTER_CACHE_NOT_READY = "ClusterCacheNotReady"  # the worker's watch cache is not synced or not watching: retry
    INSUFFICIENT_CAPACITY = "InsufficientCapacity"  # every offering of a launch answered ICE: back off, then retry
    CLOUD_UNAUTHORIZED = "CloudUnauthorized"  # EC2 refused the worker's credentials (UnauthorizedOperation): no retry
    HOOK_REFUSED = "HookRefused"  # a pre-disruption hook answered non-2xx or not at all: retried with backoff
