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


def test_get_all_answers_what_get_answers_over_random_passes() -> None:
    import random

    rng = random.Random(2)
    objs = [{"v": str(i)} for i in range(50)]
    batch, single = IdentityMemo(), IdentityMemo()
    made: list[int] = [0, 0]

    def maker(slot: int) -> Any:
        def make(obj: dict[str, Any]) -> str:
            made[slot] += 1
            return obj["v"] * 2
        return make

    for i in range(30):
        for _ in range(rng.randint(0, 8)):  # replaced, added, removed, reordered, as a cache's objects are
            j = rng.randrange(len(objs))
            op = rng.choice(["replace", "add", "remove", "swap"])
            if op == "replace":
                objs[j] = {"v": f"{i}-{j}"}
            elif op == "add":
                objs.insert(j, {"v": f"new-{i}-{j}"})
            elif op == "remove" and len(objs) > 5:
                objs.pop(j)
            else:
                k = rng.randrange(len(objs))
                objs[j], objs[k] = objs[k], objs[j]
        batch.next_pass()
        single.next_pass()
        asked = objs if i % 3 else objs[: len(objs) // 2]  # some passes ask for part of them only
        got = batch.get_all("K", asked, maker(0))
        assert got == [single.get("K", o, maker(1)) for o in asked] == [o["v"] * 2 for o in asked]
        assert batch.made == single.made and made[0] == made[1]
        assert batch.get_all("K", asked, maker(0)) == got and batch.made == single.made  # asked again: all kept
    assert 0 < made[0] < 30 * 50 // 2
