"""One token bucket (client-go's flowcontrol.NewTokenBucketRateLimiter): `rate` tokens a second up to `burst`.

Two callers: the Event recorder drops an Event when its reason's bucket is empty (`try_accept`, activities/events.py),
and the worker's EC2 client waits for a token before each request (`acquire`, gateways/ec2.py `limit_call_rate`).
Thread-safe; the clock and the sleep are injected so tests need not wait.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class TokenBucket:
    """`rate` tokens a second up to `burst`, full at the start. A rate <= 0 never waits in `acquire` (no limit)."""

    def __init__(self, rate: float, burst: float, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.rate, self.burst = rate, max(1.0, burst)
        self._clock, self._sleep = clock, sleep
        self._tokens, self._at = self.burst, clock()
        self._lock = threading.Lock()

    def _refill(self) -> None:
        now = self._clock()
        self._tokens = min(self.burst, self._tokens + (now - self._at) * self.rate)
        self._at = now

    def try_accept(self) -> bool:
        """Take a token if there is one now (client-go's TryAccept): no waiting, no debt."""
        with self._lock:
            self._refill()
            if self._tokens >= 1.0:
                self._tokens -= 1.0
                return True
            return False

    def _reserve(self) -> float:
        """Take a token (possibly going into debt) and say how long to wait for it: callers queue in order."""
        with self._lock:
            self._refill()
            self._tokens -= 1.0
            return 0.0 if self._tokens >= 0 else -self._tokens / self.rate

    def acquire(self) -> float:
        """Wait for one token; returns the seconds waited."""
        if self.rate <= 0:
            return 0.0
        wait = self._reserve()
        if wait > 0:
            self._sleep(wait)
        return wait
