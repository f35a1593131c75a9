"""Inputs and outputs of the interruption poller and the spot pre-spin workflow (plain pydantic, sandbox-safe)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from contracts.disruption import LaunchedReplacement, Replacement

POLLER_WORKFLOW_ID = "nodeflow-interruption-poller"


class PollInput(BaseModel):
    """One poll activity: long-poll the queue for `run_seconds`, then return so the workflow can checkpoint."""

    run_seconds: float = 300.0
    wait_seconds: int = 20  # SQS long-poll wait (0-20)
    max_messages: int = 10  # per ReceiveMessage (1-10)
    visibility_timeout_seconds: int = 60  # how long a received message stays hidden before redelivery
    max_receives: int = 10  # a message whose handling failed this often is logged, counted and dropped
    heartbeat_seconds: float = 20.0  # a worker that died mid-poll is noticed (and the poll retried) this fast


class PollCounts(BaseModel):
    """What the poller did; kept in the workflow across runs so the UI shows lifetime totals."""

    received: int = 0
    deleted: int = 0
    by_kind: dict[str, int] = Field(default_factory=dict)  # SpotInterruption, ..., Unknown, Malformed
    by_action: dict[str, int] = Field(default_factory=dict)  # PrespinAndTerminate, Terminate, Event, ...
    failed: int = 0  # handling raised; the message stays on the queue for redelivery
    dropped: int = 0  # gave up after max_receives

    def add(self, other: PollCounts) -> PollCounts:
        def merged(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
            return {k: a.get(k, 0) + b.get(k, 0) for k in sorted(set(a) | set(b))}

        return PollCounts(
            received=self.received + other.received, deleted=self.deleted + other.deleted,
            by_kind=merged(self.by_kind, other.by_kind), by_action=merged(self.by_action, other.by_action),
            failed=self.failed + other.failed, dropped=self.dropped + other.dropped,
        )


class PollerInput(BaseModel):
    poll: PollInput = Field(default_factory=PollInput)
    polls_per_run: int = 12  # activity runs before continue-as-new
    totals: PollCounts = Field(default_factory=PollCounts)
    runs: int = 0  # how many runs came before this one


class PrespinInput(BaseModel):
    """Launch a replacement for a node that is about to be interrupted (spot warning)."""

    node_name: str
    node_uid: str
    node_pool: str
    replacement: Replacement
    reason: str = "SpotInterrupted"

    @property
    def workflow_id(self) -> str:
        return prespin_workflow_id(self.node_uid)


class SizeInput(BaseModel):
    """Size the pre-spin from the interrupted node's pods (planning/provisioning/spot_sizing.py)."""

    node_name: str
    catalog_path: str | None = None


class SizedLaunch(BaseModel):
    """One NodeClaim the pre-spin launches, and how many of the node's pods it is for."""

    node_pool: str
    replacement: Replacement
    pods: int = 0


class SizedReplacements(BaseModel):
    found: bool = True  # False: the node is not in the cluster view (the pre-spin keeps the node's own size)
    launches: list[SizedLaunch] = Field(default_factory=list)
    pods: int = 0  # the node's pods that need a place
    placed: int = 0  # of them, fit on other nodes or on NodeClaims still launching
    unplaced: int = 0  # of them, fit nowhere (the provisioner reports them)


class PrespinResult(BaseModel):
    launched: LaunchedReplacement | None = None  # the first launch (the only one before sizing)
    error: str = ""
    launched_all: list[LaunchedReplacement] = Field(default_factory=list)
    sizing: SizedReplacements | None = None  # None: sized as the interrupted node (a history before sizing)


def prespin_workflow_id(node_uid: str) -> str:
    return f"prespin-{node_uid}"
