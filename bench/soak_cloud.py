"""The soak's cloud faults: what EC2 itself answers, injected by the stand-in's fault knob (devstack/cloud_faults.py).

All run long, `rate` of the worker's launch, terminate, describe and launch-template calls are throttled
(`RequestLimitExceeded`). Every `rotate_every` seconds the credentials are "rotated": for `window` seconds every
CreateFleet, RunInstances and TerminateInstances is refused with `UnauthorizedOperation`, as after a rotation that
left the worker's role without its policy until an operator put it back; then throttling alone again. The knob
zeroes its counts when its rules change, so the plan reads them before each change and keeps the totals, by error
code.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from devstack.cloud_faults import FaultRule, clear_faults, fault_counts, set_faults

THROTTLED = ("CreateFleet", "RunInstances", "TerminateInstances", "DescribeInstances", "CreateLaunchTemplate",
             "DescribeLaunchTemplates")
REFUSED = ("CreateFleet", "RunInstances", "TerminateInstances")


@dataclass
class CloudFaultPlan:
    endpoint: str
    rate: float = 0.05
    rotate_every: float = 900.0
    window: float = 60.0
    seed: int = 1
    injected: Counter[str] = field(default_factory=Counter)  # by error code, over the run
    calls: Counter[str] = field(default_factory=Counter)  # EC2 calls seen, by action
    rotations: int = 0
    _refusing_until: float | None = None
    _next_rotation: float | None = None

    def __post_init__(self) -> None:
        if not 0.0 <= self.rate <= 1.0:
            raise ValueError(f"the cloud fault rate must be within 0..1, not {self.rate}")
        if self.window >= self.rotate_every:
            raise ValueError("the credential window must be shorter than the time between rotations")

    def rules(self, refusing: bool) -> list[FaultRule]:
        out = [FaultRule(a, "UnauthorizedOperation") for a in REFUSED] if refusing else []
        return out + [FaultRule(a, "RequestLimitExceeded", rate=self.rate) for a in THROTTLED]

    def begin(self, now: float) -> None:
        self._next_rotation = now + self.rotate_every
        set_faults(self.endpoint, self.rules(False), seed=self.seed)

    def step(self, now: float) -> list[str]:
        """Open or close a credential window when due; returns what changed."""
        if self._refusing_until is not None and now >= self._refusing_until:
            self._apply(False)
            self._refusing_until = None
            return ["cloud: credentials back (throttling only)"]
        if self._next_rotation is not None and now >= self._next_rotation and self._refusing_until is None:
            self._apply(True)
            self.rotations += 1
            self._refusing_until, self._next_rotation = now + self.window, now + self.rotate_every
            return [f"cloud: credentials rotated, {', '.join(REFUSED)} refused for {self.window:.0f} s"]
        return []

    def _apply(self, refusing: bool) -> None:
        self._collect()
        set_faults(self.endpoint, self.rules(refusing), seed=self.seed + self.rotations)

    def _collect(self) -> None:
        report = fault_counts(self.endpoint)
        self.injected.update(report.get("injectedByCode") or {})
        self.calls.update(report.get("calls") or {})

    def stop(self) -> None:
        """Read the last counts and let every call through (the soak's convergence runs fault-free)."""
        self._collect()
        clear_faults(self.endpoint)
        self._next_rotation = self._refusing_until = None

    def figures(self) -> dict[str, Any]:
        return {"cloudFaultRate": self.rate, "credentialRotations": self.rotations,
                "cloudFaultsInjected": dict(self.injected), "ec2Calls": sum(self.calls.values())}
