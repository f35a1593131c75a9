"""glibc's allocator settings the worker applies at start (runtime/malloc_tuning.py)."""

from __future__ import annotations

import ctypes.util
import platform

import pytest

from runtime import malloc_tuning

GLIBC = platform.libc_ver()[0] == "glibc" and ctypes.util.find_library("c") is not None


def test_the_operators_malloc_arena_max_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[int, int]] = []

    class Libc:
        def mallopt(self, param: int, value: int) -> int:
            calls.append((param, value))
            return 1

    monkeypatch.setattr(malloc_tuning, "_libc", lambda: Libc())
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert malloc_tuning.limit_arenas(2) and calls == []
    monkeypatch.delenv("MALLOC_ARENA_MAX")
    assert malloc_tuning.limit_arenas(2) and calls == [(malloc_tuning.M_ARENA_MAX, 2)]


def test_without_glibc_nothing_is_done(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(malloc_tuning, "_libc", lambda: None)
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    assert not malloc_tuning.limit_arenas(2)
    assert not malloc_tuning.release_free()


@pytest.mark.skipif(not GLIBC, reason="glibc only")
def test_glibc_takes_the_cap() -> None:
    assert malloc_tuning._libc() is not None
    assert malloc_tuning.limit_arenas(2)
