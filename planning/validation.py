"""Karpenter's validation of a disruption command (pure): does a fresh plan still make the same decision?

After the validation delay the command is re-planned; `same_decision` compares the command being carried
out with a fresh one for the same method and candidates, as Karpenter's validators do.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol


class Mismatch(StrEnum):
    """Why a fresh plan no longer supports a command; the value is the message users see."""

    CANDIDATES_CHANGED = "candidates changed"
    NEW_SCHEDULING_RESULTS = "scheduling simulation produced new results"


# Methods whose command may shrink on re-planning (each candidate stands alone); the others must match exactly.
SUBSET_METHODS = frozenset({"Emptiness", "Drift", "StaticDrift"})


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
