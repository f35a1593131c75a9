"""The soak's leader bookkeeping (bench/soak_replicas.py) and cloud fault plan (bench/soak_cloud.py): the counts the
soak reports for leader kills and cloud faults, each with cases that must count."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.soak import LEADER_GAP, outage_allowance, parse_args
from bench.soak_cloud import REFUSED, THROTTLED, CloudFaultPlan
from bench.soak_replicas import LeaderLog, cloud_retries, replica_of
from bench.soak_world import WorldOptions
from devstack.cloud_faults import FAULTS


def test_a_lease_identity_names_its_replica_and_others_name_none() -> None:
    assert replica_of("soak-b_1a2b3c4d") == "b"
    assert replica_of("ip-10-0-0-1_1a2b3c4d") == "" and replica_of("") == ""


def test_both_retry_counters_are_summed_over_their_label_sets_and_nothing_else() -> None:
    page = "\n".join([
        "# TYPE nodeflow_cloud_api_retries_total counter",
        'nodeflow_cloud_api_retries_total{kind="throttled",operation="CreateFleet"} 3.0',
        'nodeflow_cloud_api_retries_total{kind="throttled",operation="TerminateInstances"} 2.0',
        "# TYPE nodeflow_cloud_api_sdk_retries_total counter",
        'nodeflow_cloud_api_sdk_retries_total{operation="CreateFleet"} 4.0',
        'nodeflow_cloud_api_retries_created{kind="throttled"} 1.7e9',
        "# TYPE nodeflow_cloud_api_errors_total counter",
        'nodeflow_cloud_api_errors_total{kind="throttled"} 9.0']) + "\n"
    assert cloud_retries(page) == 9.0
    assert cloud_retries("") == 0.0


def test_holder_changes_and_takeovers_count_and_a_steady_holder_does_not() -> None:
    log = LeaderLog()
    assert log.observe("soak-a_1", 0.0).startswith("leader: soak-a_1")
    assert log.observe("soak-a_1", 1.0) == "" and log.observe("", 2.0) == ""  # same holder, or none: no change
    assert log.changes == 0  # the first holder is no change
    log.kills, log.pending_kill = 1, (10.0, "soak-a_1")
    assert log.observe("soak-a_1", 11.0) == ""  # the killed one still shows: no takeover yet
    assert "7.5 s after the kill" in log.observe("soak-b_2", 17.5)
    assert log.changes == 1 and log.takeovers == [7.5] and log.pending_kill is None
    log.observe("soak-a_3", 30.0)  # a change without a kill (a lost renewal) counts, with no takeover
    assert log.figures() == {"leaderKills": 1, "leaderChanges": 2, "takeoverSeconds": [7.5],
                             "takeoverMaxSeconds": 7.5, "unexpectedExits": []}
    # the Lease's own acquireTime, when it has one, times the takeover, not the moment the soak's polling saw it
    log.kills, log.pending_kill = 2, (40.0, "soak-a_3")
    assert "16.5 s after the kill" in log.observe("soak-b_4", 62.0, acquired=56.5)
    assert log.takeovers == [7.5, 16.5]


def test_the_plan_rejects_a_rate_outside_0_1_and_a_window_as_long_as_the_period() -> None:
    with pytest.raises(ValueError, match=r"within 0\.\.1"):
        CloudFaultPlan("http://x", rate=1.5)
    with pytest.raises(ValueError, match="shorter"):
        CloudFaultPlan("http://x", rotate_every=60, window=60)


def test_the_plan_throttles_then_opens_and_closes_a_credential_window_and_keeps_counts_by_code(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The plan against the stand-in's own knob (its HTTP side replaced by the knob in process)."""
    import bench.soak_cloud as plan_mod

    def put(endpoint: str, rules: list, seed: int = 0) -> dict:
        FAULTS.configure({"rules": [r.__dict__ for r in rules], "seed": seed})
        return FAULTS.report()

    monkeypatch.setattr(plan_mod, "set_faults", put)
    monkeypatch.setattr(plan_mod, "fault_counts", lambda endpoint: FAULTS.report())
    monkeypatch.setattr(plan_mod, "clear_faults", lambda endpoint: FAULTS.configure({}, active=False) or {})
    plan = CloudFaultPlan("http://stand-in", rate=1.0, rotate_every=100, window=10)
    plan.begin(0.0)
    assert FAULTS.decide({"Action": "CreateFleet"}) == "RequestLimitExceeded"
    assert FAULTS.decide({"Action": "CreateTags"}) is None  # not a call the plan throttles
    assert plan.step(50.0) == []
    assert "refused for 10 s" in plan.step(100.0)[0]
    assert FAULTS.decide({"Action": "TerminateInstances"}) == "UnauthorizedOperation"
    assert plan.step(105.0) == []
    assert plan.step(110.0) == ["cloud: credentials back (throttling only)"]
    assert FAULTS.decide({"Action": "TerminateInstances"}) == "RequestLimitExceeded"
    plan.stop()
    assert plan.figures()["cloudFaultsInjected"] == {"RequestLimitExceeded": 2, "UnauthorizedOperation": 1}
    assert plan.figures()["credentialRotations"] == 1 and plan.figures()["ec2Calls"] == 4
    assert set(REFUSED) <= set(THROTTLED)


def test_the_pending_bound_allows_for_the_runs_own_launch_gaps_and_nothing_else(tmp_path: Path) -> None:
    """A pod created inside a credential window or a leaderless gap waits that long for nothing nodeflow did; a
    run without those faults keeps the plain bound."""
    assert outage_allowance(parse_args(["--minutes", "1"])) == 0.0
    assert outage_allowance(parse_args(["--cloud-faults", "0.05", "--credential-window", "60"])) == 60.0
    both = parse_args(["--replicas", "2", "--kill-leader-every", "10", "--cloud-faults", "0.05"])
    assert outage_allowance(both) == 60.0 + LEADER_GAP
    plain = WorldOptions(workdir=tmp_path).pending_bound_seconds()
    assert WorldOptions(workdir=tmp_path, outage_allowance=80.0).pending_bound_seconds() == pytest.approx(plain + 80.0)


def test_bad_soak_options_are_refused_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    for argv, message in ((["--replicas", "0"], "at least 1"),
                          (["--kill-leader-every", "10"], "needs --replicas 2"),
                          (["--cloud-faults", "2"], "within 0..1"),
                          (["--cloud-faults", "0.1", "--credential-window", "900", "--credential-every", "15"],
                           "shorter than")):
        with pytest.raises(SystemExit) as exc:
            parse_args(argv)
        assert exc.value.code == 2 and message in capsys.readouterr().err, argv
