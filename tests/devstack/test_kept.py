"""devstack/kept.py: the stand-in's bounded memory of computed answers drops the oldest first."""

from __future__ import annotations

from devstack.kept import Kept


def test_the_oldest_answer_goes_first_past_the_limit() -> None:
    kept: Kept[str, int] = Kept(2)
    kept.put("a", 1)
    kept.put("b", 2)
    kept.put("c", 3)
    assert (kept.get("a"), kept.get("b"), kept.get("c")) == (None, 2, 3)


def test_no_limit_keeps_everything() -> None:
    kept: Kept[int, int] = Kept(None)
    for i in range(100):
        kept.put(i, i)
    assert all(kept.get(i) == i for i in range(100))
