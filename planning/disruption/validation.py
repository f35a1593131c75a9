"""Karpenter's validation of a disruption command (pure): does the decision still hold after the delay?

Consolidation and SpotReturn commands are re-simulated on their own candidates (planning/planner/recheck.py,
Karpenter's ConsolidationValidator); the other validated methods are re-planned, and `same_decision` compares the
command being carried out with the fresh one for the same method and candidates.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from api import events
from planning.disruption.method_names import DRIFT_METHODS, MethodName


class Mismatch(StrEnum):
    """Why a fresh plan no longer supports a command; the value is the message users see."""

    CANDIDATES_CHANGED = "candidates changed"
    NEW_SCHEDULING_RESULTS = "scheduling simulation produced new results"
    BUDGET = "the NodePool's disruption budget allows no more Underutilized disruptions"
    HELD = "a DisruptionPolicy calendar holds the NodePool"
    NOT_CHOSEN = "candidates are no longer chosen"  # a re-planned (non-consolidation) command's pass picked others
    # Not a failure: a consolidation planned with a replacement whose candidates, simulated again, fit on the other
    # nodes without one. Karpenter throws such a command away (NEW_SCHEDULING_RESULTS); nodeflow deletes the same
    # candidates without launching (docs/semantics.md §5.8, §12).
    REPLACEMENT_NOT_NEEDED = events.WITHOUT_REPLACEMENT


class Verdict(StrEnum):
    """A validation's outcome: the `result` label of nodeflow_disruption_validations_total, so failures are
    counted by typed reason (a message can name a node)."""

    VALID = "valid"
    CACHE_STALE = "cache_stale"
    POOL_PAUSED = "pool_paused"
    CANDIDATE_GONE = "candidate_gone"
    CANDIDATE_IN_FLIGHT = "candidate_in_flight"
    NOT_CHOSEN = "not_chosen"
    CANDIDATES_CHANGED = "candidates_changed"
    NEW_SCHEDULING_RESULTS = "new_scheduling_results"
    BUDGET = "budget"
    HELD = "held"
    REPLACEMENT_NOT_NEEDED = "valid_without_replacement"  # carried out as a delete (Mismatch.REPLACEMENT_NOT_NEEDED)

    @classmethod
    def of(cls, mismatch: Mismatch) -> Verdict:
        return cls[mismatch.name]

    @property
    def valid(self) -> bool:
        """The command goes ahead (as planned, or as a delete of the same candidates)."""
        return self in (Verdict.VALID, Verdict.REPLACEMENT_NOT_NEEDED)


# Methods whose command may shrink on re-planning (each candidate stands alone); the others must match exactly.
SUBSET_METHODS = frozenset({MethodName.EMPTINESS, *DRIFT_METHODS})


class ReplacementLike(Protocol):
    """What validation reads of a replacement (planning's or the workflow payload's)."""

    instance_types: list[str]
    capacity_type: str


@dataclass(frozen=True)
class Choice:
    """One replacement as validation compares it: its capacity type and the allowed instance types."""

    capacity_type: str
    instance_types: frozenset[str]


@dataclass(frozen=True)
class Decision:
    """A command reduced to what validation compares: method, candidate names, replacements in order."""

    method: str
    nodes: frozenset[str]
    replacements: tuple[Choice, ...]

    @classmethod
    def of(cls, method: str, nodes: Iterable[str], replacements: Iterable[ReplacementLike]) -> Decision:
        return cls(method, frozenset(nodes),
                   tuple(Choice(r.capacity_type, frozenset(r.instance_types)) for r in replacements))


def same_decision(ours: Decision, new: Decision) -> Mismatch | None:
    """None when `new` (from re-planning) still supports `ours`; else why not."""
    if ours.nodes - new.nodes:
        return Mismatch.CANDIDATES_CHANGED
    if ours.method not in SUBSET_METHODS and ours.nodes != new.nodes:
        return Mismatch.CANDIDATES_CHANGED
    if len(ours.replacements) != len(new.replacements):
        return Mismatch.NEW_SCHEDULING_RESULTS
    for a, b in zip(ours.replacements, new.replacements, strict=True):
        if a.capacity_type != b.capacity_type or not a.instance_types & b.instance_types:
            return Mismatch.NEW_SCHEDULING_RESULTS
    return None


# Consolidation commands are re-checked as Karpenter's ConsolidationValidator does (docs/semantics.md §5.8):
# the same candidates, re-simulated, rather than a whole fresh pass that must pick them again
# (planning/planner/recheck.py).
