"""Injected API faults: a rate of 429 / 500 / 409 answers and added latency, for chaos tests."""

from __future__ import annotations

import random
import threading
from collections import Counter
from dataclasses import dataclass, field

from simulator.errors import ApiError

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


@dataclass
class FaultConfig:
    rate: float = 0.0
    codes: tuple[int, ...] = (429, 500, 409)
    latency: float = 0.0  # seconds added to every resource request
    methods: frozenset[str] | None = None  # None: every method
    resources: frozenset[str] | None = None  # plural names; None: every resource


@dataclass
class Faults:
    """Decides per request whether to fail it; counts what it injected."""

    config: FaultConfig = field(default_factory=FaultConfig)
    injected: Counter = field(default_factory=Counter)
    rng: random.Random = field(default_factory=lambda: random.Random(11))
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def set(self, rate: float = 0.0, codes: tuple[int, ...] = (429, 500, 409), latency: float = 0.0,
            methods: tuple[str, ...] | None = None, resources: tuple[str, ...] | None = None) -> None:
        if not 0.0 <= rate <= 1.0:
            raise ValueError("rate must be within [0, 1]")
        with self._lock:
            self.config = FaultConfig(rate=rate, codes=tuple(int(c) for c in codes), latency=max(latency, 0.0),
                                      methods=frozenset(m.upper() for m in methods) if methods else None,
                                      resources=frozenset(resources) if resources else None)

    def pick(self, method: str, plural: str) -> ApiError | None:
        """The error to answer with, or None to serve the request normally."""
        with self._lock:
            cfg = self.config
            if cfg.rate <= 0 or (cfg.methods and method not in cfg.methods) or (
                    cfg.resources and plural not in cfg.resources):
                return None
            codes = [c for c in cfg.codes if c != 409 or method in WRITE_METHODS]
            if not codes or self.rng.random() >= cfg.rate:
                return None
            code = self.rng.choice(codes)
            self.injected[str(code)] += 1
        if code == 429:
            return ApiError(429, "the server has received too many requests and has asked us to try again later",
                            details={"causes": [{"reason": "TooManyRequests"}], "retryAfterSeconds": 1},
                            headers={"Retry-After": "1"})
        if code == 409:
            return ApiError(409, f"Operation cannot be fulfilled on {plural}: the object has been modified; "
                                 "please apply your changes to the latest version and try again (injected)")
        return ApiError(code, f"Internal error occurred: injected fault {code}")
