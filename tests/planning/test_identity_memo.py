"""IdentityMemo (planning/identity_memo.py): a value is reused for the very object only, carried to the next pass
when a pass asked for it, and forgotten after a pass that asked for others but not for it."""

from __future__ import annotations

from typing import Any

from planning.identity_memo import IdentityMemo


def test_reused_for_the_same_object_only_and_kept_one_pass_after_its_last_use() -> None:
    memo = IdentityMemo()
    made: list[Any] = []

    def make(obj: dict[str, Any]) -> int:
        made.append(obj)
        return len(obj["v"])

    a, equal_to_a = {"v": "abc"}, {"v": "abc"}
    assert memo.get("K", a, make) == 3
    assert memo.get("K", a, make) == 3 and made == [a]
    assert memo.get("K", equal_to_a, make) == 3 and made == [a, equal_to_a]  # equal is not the same
    assert memo.get("Other", a, make) == 3 and len(made) == 3  # kinds are kept apart
    memo.next_pass()
    assert memo.get("K", a, make) == 3 and len(made) == 3 and memo.made == 0  # carried to the next pass
    memo.next_pass()  # a read that asks for nothing (another activity's) drops nothing
    memo.next_pass()
    assert memo.get("K", a, make) == 3 and len(made) == 3
    memo.next_pass()
    memo.get("K", equal_to_a, make)  # a pass that asks for another object only
    memo.next_pass()
    assert memo.get("K", a, make) == 3 and len(made) == 5 and memo.made == 1  # forgotten: made again
