"""Which launch templates a worker process may delete now: those no launch used for a minute and no launch holds.

Karpenter's launch template cache (aws/karpenter-provider-aws `pkg/providers/launchtemplate/launchtemplate.go`):
every template a launch makes or finds is cached for `DefaultTTL` (1 minute, `pkg/cache/cache.go`), each use
extends it, the cache is hydrated at start with the cluster's templates found in EC2, and an entry's eviction
(the janitor runs every minute) deletes the template. So a template of an old class revision, or of parameters no
launch asks for any more, is gone a minute or two after its last launch, and the next launch that needs it makes
it again. nodeflow keeps the same book per worker process, and one rule Karpenter gets from its lock: a template
held by a launch in progress (between making it and EC2's answer to the CreateFleet) is never stale.

Pure and thread-safe (launches run in threads); the clock is injected so tests can age entries. The activity that
deletes what `take_stale` returns is activities/launch_templates.py.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable

TTL_SECONDS = 60.0  # Karpenter's DefaultTTL for the launch template cache
SWEEP_SECONDS = 60.0  # Karpenter's DefaultCleanupInterval: how often expired entries are evicted (and deleted)


class TemplateBook:
    """Templates this process made or found, when each was last used, and how many launches hold each now."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, ttl_seconds: float = TTL_SECONDS) -> None:
        self._clock = clock
        self._ttl = ttl_seconds
        self._used: dict[str, float] = {}  # name -> last use (made, found, held or released)
        self._holds: Counter[str] = Counter()
        self._lock = threading.Lock()

    def hold(self, name: str) -> bool:
        """A launch is about to use `name`: no sweep deletes it until `release`. True when the template is known to
        exist (made or found before, not swept since), so the launch need not ask EC2."""
        with self._lock:
            self._holds[name] += 1
            known = name in self._used
            if known:
                self._used[name] = self._clock()
            return known

    def remember(self, name: str) -> None:
        """`name` exists in EC2 now (this process made it, or found it)."""
        with self._lock:
            self._used[name] = self._clock()

    def release(self, names: Iterable[str]) -> None:
        """The launch that held `names` is over (launched or not): each is used now, and held one time less."""
        with self._lock:
            now = self._clock()
            for name in names:
                self._holds[name] -= 1
                if self._holds[name] <= 0:
                    del self._holds[name]
                if name in self._used:
                    self._used[name] = now

    def forget(self) -> None:
        """EC2 said a template is gone (deleted behind this process): every launch asks EC2 again; holds stay."""
        with self._lock:
            self._used.clear()

    def hydrate(self, names: Iterable[str]) -> None:
        """Templates found in EC2 at start (Karpenter's hydrateCache): each gets one TTL from now to be used."""
        with self._lock:
            now = self._clock()
            for name in names:
                self._used.setdefault(name, now)

    def take_stale(self) -> list[str]:
        """The templates unused for a TTL that no launch holds, removed from the book (a launch that wants one later
        makes it again); the caller deletes them."""
        with self._lock:
            now = self._clock()
            stale = sorted(n for n, t in self._used.items() if now - t >= self._ttl and not self._holds.get(n))
            for name in stale:
                del self._used[name]
            return stale

    def known(self) -> list[str]:
        with self._lock:
            return sorted(self._used)

    def held(self) -> list[str]:
        with self._lock:
            return sorted(self._holds)
