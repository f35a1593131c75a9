"""Input and result of the EC2NodeClass resolution (NodeClassWorkflow and its activity)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True)


class NodeClassInput(_Model):
    """`names`: resolve only these classes; empty: every EC2NodeClass."""

    names: list[str] = Field(default_factory=list)


class NodeClassOutcome(_Model):
    """One class after resolution: Ready, and what did not resolve (the Ready message, unmatched terms)."""

    name: str
    ready: bool
    message: str = ""
    unmatched: list[str] = Field(default_factory=list)
    amis: int = 0
    subnets: int = 0
    security_groups: int = 0


class NodeClassResult(_Model):
    """`drifted`: NodeClaims whose Drifted condition names their class, by reason, after this run."""

    classes: list[NodeClassOutcome] = Field(default_factory=list)
    drifted: dict[str, int] = Field(default_factory=dict)
