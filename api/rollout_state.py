"""A drift rollout's state as its NodePool carries it (`nodeflow.dev/rollout`, docs/semantics.md §15.2).

DriftRolloutWorkflow writes it whenever its phase changes and removes it when it ends; `nodeflow plan` reads it
from the snapshot (which has no Temporal) to say why a pool's drifted nodes wait. Informational only: the
workflow's own state stays the truth, and the worker's planner never reads this annotation.
"""

from __future__ import annotations

import json
from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.alias_generators import to_camel

from api.timestamps import format_seconds


class RolloutNotePhase(StrEnum):
    """The annotation's phases (coarser than the workflow's: planning, disrupting and health checks are Running)."""

    RUNNING = "Running"
    BAKING = "Baking"
    HALTED = "Halted"


class RolloutNote(BaseModel):
    model_config = ConfigDict(populate_by_name=True, alias_generator=to_camel, extra="ignore")

    generation: str = ""
    wave: int = 0
    waves: int = 0
    phase: RolloutNotePhase
    bake_until: datetime | None = None
    halt_reason: str = ""
    # which halt of this rollout (1, 2, ...): a reader that resumed halt 1 tells a note not yet rewritten from a new
    # halt (FleetRolloutWorkflow, docs/fleet.md §5); 0 in notes written before it was added
    halt: int = 0

    def to_annotation(self) -> str:
        """Compact JSON, the deadline as RFC 3339 UTC at whole seconds (`2026-11-23T16:40:00Z`)."""
        data = self.model_dump(mode="json", by_alias=True, exclude_none=True)
        if self.bake_until is not None:
            data["bakeUntil"] = format_seconds(self.bake_until)
        return json.dumps(data, separators=(",", ":"), sort_keys=True)


def parse_rollout_note(text: str | None) -> RolloutNote | None:
    """The annotation's note; None when absent or unreadable (a hand-edited value must not fail a plan)."""
    if not text:
        return None
    try:
        return RolloutNote.model_validate_json(text)
    except ValidationError:
        return None
