"""DisruptionPolicy through the CLI: `nodeflow validate` (field paths, conflicts naming both policies, graceful expiry
against expireAfter) and `nodeflow plan -f` (calendar holds, skipped moves, graceful expiry)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from starter.cli import run

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
AT = "2026-11-22T20:00:00Z"

TWO_ON_GENERAL = """\
apiVersion: nodeflow.dev/v1alpha1
kind: DisruptionPolicy
metadata: {name: by-name}
spec:
  nodePools: [general]
  expiration: {gracefulExpireAfter: 800h}
---
apiVersion: nodeflow.dev/v1alpha1
kind: DisruptionPolicy
metadata: {name: everything}
spec:
  nodePoolSelector: {}
"""

BAD = """\
apiVersion: nodeflow.dev/v1alpha1
kind: DisruptionPolicy
metadata: {name: bad}
spec:
  nodePools: [general]
  drift: {waves: ["150%"], bakeTime: soon}
  hooks: {preDisruption: {url: "http://gate", ack: required}}
  consolidation: {minSavingsPerHour: 0.05}
  calendar:
    timeZone: Europe/Berlln
    allowWindows: [{schedule: "0 1 * * 1-5", durration: 4h}]
"""


def _validate(capsys: pytest.CaptureFixture[str], *paths: Path) -> tuple[int, str]:
    args = ["validate"]
    for p in paths:
        args += ["-f", str(p)]
    code = run(args)
    return code, capsys.readouterr().out


def test_problems_have_field_paths(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text(BAD)
    code, out = _validate(capsys, f)
    assert code == 1
    where = f"{f}: document 1 (DisruptionPolicy/bad): "
    for line in ("spec.drift.waves: waves[0]: '150%' must be a percentage 1%-100%",
                 "spec.drift.bakeTime: 'soon' is not a duration",
                 "spec.hooks.preDisruption.ack: Input should be 'Required' or 'None'",
                 "spec.consolidation.minSavingsPerHour: 0.05 must be a quoted decimal string",
                 "spec.calendar.timeZone: unknown time zone 'Europe/Berlln'",
                 "spec.calendar.allowWindows[0].duration: required field is missing",
                 "spec.calendar.allowWindows[0].durration: unknown field"):
        assert where + line in out, out


def test_two_policies_on_one_pool_are_an_error_naming_both(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "policies.yaml"
    f.write_text(TWO_ON_GENERAL)
    code, out = _validate(capsys, f, ROOT / "deploy" / "examples" / "nodepools.yaml")
    assert code == 1
    conflict = ("NodePool 'general' is selected by two DisruptionPolicies, 'by-name' and 'everything'; "
                "at most one may apply")
    assert f"(DisruptionPolicy/by-name): spec: {conflict}" in out
    assert f"(DisruptionPolicy/everything): spec: {conflict}" in out
    assert "'stateful' is selected by two" not in out  # only `everything` selects stateful


def test_graceful_expiry_must_come_before_expire_after(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "policy.yaml"
    f.write_text(TWO_ON_GENERAL.split("---")[0])
    code, out = _validate(capsys, f, ROOT / "deploy" / "examples" / "nodepools.yaml")
    assert code == 1
    assert ("(DisruptionPolicy/by-name): spec.expiration.gracefulExpireAfter: 800h must be shorter than NodePool "
            "'general''s expireAfter (720h)") in out


def test_example_policies_validate(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _validate(capsys, EXAMPLES / "disruption-policy.yaml", ROOT / "deploy" / "examples" / "nodepools.yaml",
                          ROOT / "deploy" / "examples" / "disruptionpolicies.yaml")
    assert code == 1  # both select `general`: a conflict, named
    assert "'general-rollout' and 'general'" in out or "'general' and 'general-rollout'" in out
    code, out = _validate(capsys, ROOT / "deploy" / "examples" / "nodepools.yaml",
                          ROOT / "deploy" / "examples" / "disruptionpolicies.yaml")
    assert (code, out) == (0, "valid\n")


def _plan(capsys: pytest.CaptureFixture[str], name: str, *extra: str) -> dict:
    code = run(["plan", "-f", str(EXAMPLES / name), "--at", AT, "-o", "json", *extra])
    out = capsys.readouterr().out
    assert code == 0
    return json.loads(out)


def test_plan_reads_policies_from_the_snapshot_and_says_why_drift_waits(capsys: pytest.CaptureFixture[str]) -> None:
    data = _plan(capsys, "plan-calendar.yaml")
    assert data["commands"] == []
    assert data["blocked"] == [{"node": "node-a", "reason": (
        "calendar exclusion 2026-11-20..2026-11-23 (Europe/Berlin) until 2026-11-24T00:00+01:00 "
        "(DisruptionPolicy change-freeze)")}]
    assert data["disruptionPolicies"] == [{
        "nodePool": "default", "policy": "change-freeze",
        "held": "calendar exclusion 2026-11-20..2026-11-23 (Europe/Berlin) until 2026-11-24T00:00+01:00",
        "heldUntil": "2026-11-23T23:00:00Z", "conflict": None}]
    assert list(data)[:7] == ["at", "budgets", "commands", "blocked", "final", "provisioning", "nodePoolsBlocked"]


def test_plan_lists_skipped_moves(capsys: pytest.CaptureFixture[str]) -> None:
    data = _plan(capsys, "plan-savings-threshold.yaml")
    assert data["commands"] == []
    multi = next(m for m in data["skippedMoves"] if m["method"] == "MultiNodeConsolidation")
    assert multi["reason"] == "savings $0.615/h below threshold $1.03/h (3 pod(s) x $0.01)"
    assert multi["pods"] == 3 and sorted(multi["nodes"]) == ["node-a", "node-b"]
    assert run(["plan", "-f", str(EXAMPLES / "plan-savings-threshold.yaml"), "--at", AT, "-o", "table"]) == 0
    table = capsys.readouterr().out
    assert "SKIPPED MOVES (3)" in table and "below threshold $1.03/h" in table


def test_plan_graceful_expiry(capsys: pytest.CaptureFixture[str]) -> None:
    data = _plan(capsys, "plan-expiring.yaml")
    assert [(c["method"], c["reason"], c["nodes"]) for c in data["commands"]] == [
        ("GracefulExpiration", "Expiring", ["node-old"])]
    assert _plan(capsys, "plan-consolidate.yaml")["skippedMoves"] == []
