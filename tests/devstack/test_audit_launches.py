"""devstack/audit.py duplicate_launches, the safety count of the chaos suite and the soak: cases that must count
and cases that must not (a fleet-launched instance has no ClientToken of its own)."""

from __future__ import annotations

from typing import Any

from api.labels import NODECLAIM_TAG, NODECLAIM_UID_TAG
from devstack.audit import duplicate_launches


def _instance(iid: str, claim: str | None, token: str | None = None, ours: bool = True) -> dict[str, Any]:
    tags = ([{"Key": NODECLAIM_TAG, "Value": claim}] if claim else []) + (
        [{"Key": NODECLAIM_UID_TAG, "Value": f"uid-{claim}"}] if ours and claim else [])
    return {"InstanceId": iid, "Tags": tags, **({"ClientToken": token} if token is not None else {})}


def test_two_instances_of_one_nodeclaim_count_whatever_launched_them() -> None:
    fleet_twice = [_instance("i-1", "a"), _instance("i-2", "a"), _instance("i-3", "b")]
    assert duplicate_launches(fleet_twice) == ["a"]
    run_twice = [_instance("i-1", "a", "tok-a"), _instance("i-2", "a", "tok-a2")]
    assert duplicate_launches(run_twice) == ["a"]


def test_one_client_token_behind_two_instances_counts() -> None:
    assert duplicate_launches([_instance("i-1", "a", "tok"), _instance("i-2", "b", "tok")]) == ["tok"]


def test_fleet_launches_without_a_token_and_instances_not_ours_do_not_count() -> None:
    fleet = [_instance(f"i-{n}", f"claim-{n}") for n in range(4)]  # no ClientToken on any: four launches, no dup
    assert duplicate_launches(fleet) == []
    blank = [_instance("i-1", "a", ""), _instance("i-2", "b", "")]
    assert duplicate_launches(blank) == []
    theirs = [_instance("i-1", None, "tok"), _instance("i-2", None, "tok")]  # no claim tag: not our launches
    assert duplicate_launches(theirs) == []
