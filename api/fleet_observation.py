"""What a cluster's worker reports of a fleet rollout's change in its cluster (docs/fleet.md).

Counted by the cluster's worker (activities/fleet.py), judged by planning/fleet/progress.py, carried in the
FleetRolloutWorkflow's status: so these are plain data, the same in all three places.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from api.rollout_state import RolloutNote


class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True)


class PoolObservation(_Model):
    name: str
    exists: bool = True
    applied: bool = False  # the object the change lands on carries this rollout's record
    nodes: int = 0  # NodeClaims of the pool not being deleted
    updated: int = 0  # ... of which run what the change asks for (the image, or the template)
    drifted: int = 0  # ... of which carry Drifted=True
    launching: int = 0  # NodeClaims launched but not yet initialized
    rollout: RolloutNote | None = None  # the pool's DisruptionPolicy drift rollout, when one runs


class ClusterObservation(_Model):
    cluster: str
    at: datetime | None = None
    node_class: str | None = None  # for an EC2NodeClass change: its name
    node_class_found: bool = True
    node_class_resolved: bool = True  # the class's conditions were written for its current generation
    node_class_ready: bool = True
    node_class_message: str = ""
    pools: list[PoolObservation] = Field(default_factory=list)
    pods_pending: int = 0
    pods_not_ready: int = 0  # bound, not finished, and not Running and Ready
    pod_examples: list[str] = Field(default_factory=list)  # up to 5 namespace/name of the pods above
