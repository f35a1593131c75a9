"""ThreadProfiles sees the work of threads started after it, which a main-thread cProfile never does, by each
thread's CPU clock."""

from __future__ import annotations

import pstats
import threading
import time
from pathlib import Path

from runtime.thread_profile import ThreadProfiles


def _spin(n: int) -> int:
    return sum(i * i for i in range(n))


def test_every_thread_is_profiled_and_counted_by_kind(tmp_path: Path) -> None:
    profiles = ThreadProfiles().start()
    threads = [threading.Thread(target=_spin, args=(200_000,), name=f"informer-pods-{i}") for i in range(3)]
    threads.append(threading.Thread(target=time.sleep, args=(0.3,), name="sleeper"))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    gate = threading.Event()
    waiting = threading.Thread(target=gate.wait, name="idle-pool")  # still blocked when the stats are written
    waiting.start()
    _spin(20_000)
    out = tmp_path / "worker.prof"
    profiles.dump(out)
    gate.set()
    waiting.join()

    calls = {key[2]: value[1] for key, value in pstats.Stats(str(out)).stats.items()}  # type: ignore[attr-defined]
    assert calls["_spin"] == 4  # three threads and the main thread
    kinds = dict(line.split(" s  ")[::-1] for line in (tmp_path / "worker.prof.threads").read_text().splitlines())
    assert set(kinds) == {"informer-pods-_", "main", "sleeper", "idle-pool"}
    assert float(kinds["informer-pods-_"]) > float(kinds["main"]) > 0
    assert float(kinds["sleeper"]) < 0.05, "CPU time: a thread that waits costs nothing"
    assert float(kinds["idle-pool"]) < 0.05, "a call still open at the dump is not charged the dumping thread's CPU"
