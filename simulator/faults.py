"""Injected API faults, for chaos tests: a rate of 429 / 500 / 409 answers and added latency, an outage (every
API request answers 503), cuts of the open watch streams, and 410 Gone on the next watch resumes.
"""

from __future__ import annotations

import math
import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field

from simulator.errors import ApiError

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
OUTAGE_MESSAGE = "the server is currently unable to handle the request"
KNOBS = ("outagesStarted", "outageRejected", "watchCuts", "watchStreamsCut", "goneServed")


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
    knobs: Counter = field(default_factory=Counter)  # what the outage, watch-cut and Gone knobs did (KNOBS)
    outage_until: float = 0.0  # time.monotonic() deadline; math.inf: until switched off
    gone_armed: int = 0  # watch resumes still to answer with 410 Gone
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

    # ---- outage, watch cuts, Gone ------------------------------------------------------------------------
    def start_outage(self, seconds: float | None = None) -> None:
        """Every API request answers 503 for `seconds` of wall time (None: until end_outage)."""
        if seconds is not None and not seconds > 0:  # NaN too
            raise ValueError("an outage lasts a positive number of seconds")
        with self._lock:
            self.outage_until = math.inf if seconds is None else time.monotonic() + seconds
            self.knobs["outagesStarted"] += 1

    def end_outage(self) -> None:
        with self._lock:
            self.outage_until = 0.0

    def outage_active(self) -> bool:
        return time.monotonic() < self.outage_until

    def outage_error(self) -> ApiError | None:
        """The 503 to answer while an outage lasts (counted), else None."""
        if not self.outage_active():
            return None
        with self._lock:
            self.knobs["outageRejected"] += 1
        return ApiError(503, OUTAGE_MESSAGE, reason="ServiceUnavailable")

    def note_watch_cut(self, streams: int) -> None:
        with self._lock:
            self.knobs["watchCuts"] += 1
            self.knobs["watchStreamsCut"] += streams

    def arm_gone(self, count: int = 1) -> int:
        """The next `count` watches that resume from a resourceVersion get 410 Gone; returns how many are armed."""
        if count < 0:
            raise ValueError("count must not be negative")
        with self._lock:
            self.gone_armed += count
            return self.gone_armed

    def take_gone(self) -> bool:
        """Whether this watch resume answers 410 Gone (uses up one armed answer)."""
        with self._lock:
            if self.gone_armed <= 0:
                return False
            self.gone_armed -= 1
            self.knobs["goneServed"] += 1
            return True

    def knob_stats(self, open_watches: int) -> dict[str, int | bool]:
        with self._lock:
            out: dict[str, int | bool] = {k: self.knobs.get(k, 0) for k in KNOBS}
            out.update(outageActive=self.outage_active(), goneArmed=self.gone_armed, watchesOpen=open_watches)
            return out
