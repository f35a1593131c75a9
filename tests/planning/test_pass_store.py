"""planning/pass_store.py: what a pass asked for is kept for the next; the rest goes; an empty pass drops nothing."""

from __future__ import annotations

from planning.pass_store import PassStore


def test_what_a_pass_did_not_ask_for_goes_when_the_next_starts() -> None:
    store: PassStore[str, int] = PassStore()
    store.now.update(a=1, b=2)
    store.next_pass()
    assert store.last == {"a": 1, "b": 2} and store.now == {}
    store.now["a"] = store.last["a"]  # the second pass asks only for a
    store.next_pass()
    assert store.last == {"a": 1}  # b is gone


def test_a_pass_that_asked_for_nothing_drops_nothing() -> None:
    store: PassStore[str, int] = PassStore()
    store.now["a"] = 1
    store.next_pass()
    store.next_pass()  # a read between two passes, asking for nothing
    assert store.last == {"a": 1}


def test_get_reads_this_pass_before_the_last() -> None:
    store: PassStore[str, int] = PassStore()
    store.now["a"] = 1
    store.next_pass()
    store.now["b"] = 2
    assert (store.get("a"), store.get("b"), store.get("c")) == (1, 2, None)
    store.last["b"] = 3
    assert store.get("b") == 2  # this pass's value wins
