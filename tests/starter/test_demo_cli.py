"""`nodeflow demo` pieces that need no stack: argument errors, the live screen, the printed hints, the scenario."""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from api import labels as L
from devstack.demo_scenario import demo_cluster
from starter import cmd_demo
from starter.cli import run


def test_non_positive_duration_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["demo", "--headless", "--duration", "0"]) != 0
    assert "error: --duration must be positive" in capsys.readouterr().err


def test_non_positive_moments_speed_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["demo", "--headless", "--moments-speed", "0"]) != 0
    assert "error: --moments-speed must be positive" in capsys.readouterr().err


def test_until_moments_waits_for_every_moment_the_run_has() -> None:
    """--until-moments ends the run only when each moment this stack has reached its milestone."""
    stack = SimpleNamespace(queue_url="http://sqs/q", aws=object())
    done = SimpleNamespace(rehomed_after=10.0, running_after=8.0, first_drift_after=12.0)
    m = cmd_demo._Moments(rehoming=done, scale_up=done, rollout=done, interrupted_node="spot-27")
    assert not m.all_reached(stack, bundled=True)  # the interrupted node is not deleting yet
    m.interruption_begun = True
    assert m.all_reached(stack, bundled=True)
    m.rollout = SimpleNamespace(first_drift_after=None)  # the new AMI's first Drift disruption not started
    assert not m.all_reached(stack, bundled=True)
    # a stack without the interruption queue and the EC2NodeClasses, on a scenario of the user's own
    bare = cmd_demo._Moments()
    assert bare.all_reached(SimpleNamespace(queue_url=None, aws=None), bundled=False)
    assert not bare.all_reached(SimpleNamespace(queue_url=None, aws=None), bundled=True)  # the scale-up to come


async def test_moments_speed_brings_the_scripted_moments_sooner(monkeypatch: pytest.MonkeyPatch) -> None:
    """--moments-speed 2: the scale-up due at 20 s comes at 10 s, and reports the demo's own clock."""
    at: list[float] = []
    monkeypatch.setattr("starter.demo_capacity.scale_up", lambda core, elapsed: at.append(elapsed))
    stack, m = SimpleNamespace(queue_url=None, aws=None), cmd_demo._Moments()
    assert await cmd_demo._advance(stack, None, m, 9.0, bundled=True, speed=2.0) == [] and at == []
    await cmd_demo._advance(stack, None, m, 10.0, bundled=True, speed=2.0)
    assert at == [10.0]


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_live_screen_redraws_in_place_on_a_terminal() -> None:
    out = _Tty()
    screen = cmd_demo._LiveScreen(out)
    screen.show("[    2s] a\nb")
    screen.show("[    4s] a\nc")
    assert out.getvalue() == "[    2s] a\nb\n\x1b[2F\x1b[J[    4s] a\nc\n"


def test_live_screen_prints_only_changes_to_a_pipe() -> None:
    out = io.StringIO()
    screen = cmd_demo._LiveScreen(out)
    screen.show("[    2s] nodes 30")
    screen.show("[    4s] nodes 30")  # only the clock moved
    screen.show("[    6s] nodes 29")
    assert out.getvalue() == "[    2s] nodes 30\n[    6s] nodes 29\n"
    assert "\x1b" not in out.getvalue()


def _stack(ui: str | None) -> SimpleNamespace:
    return SimpleNamespace(kubeconfig="/tmp/demo/kubeconfig",
                           temporal=SimpleNamespace(address="127.0.0.1:7233", ui_url=ui),
                           moto=SimpleNamespace(endpoint="http://127.0.0.1:5123"),
                           o=SimpleNamespace(region="eu-west-1", env={"AWS_ACCESS_KEY_ID": "testing",
                                                                      "AWS_SECRET_ACCESS_KEY": "testing"}))


def test_hints_name_a_node_that_exists_and_the_env_the_commands_need() -> None:
    names = {"general-01", "general-02"}
    text = "\n".join(cmd_demo._hints(_stack("http://127.0.0.1:8233"), names))
    assert "export KUBECONFIG=/tmp/demo/kubeconfig NODEFLOW_TEMPORAL_ADDRESS=127.0.0.1:7233" in text
    nf, kubectl = cmd_demo.command_path("nodeflow"), cmd_demo.command_path("kubectl")
    assert f"{kubectl} delete node general-01 --wait=false" in text
    assert f"{nf} status general-01; {nf} force general-01 --reason demo" in text
    assert "http://127.0.0.1:8233/namespaces/default/workflows?query=NodeflowPhase%3D%22Draining%22" in text
    assert ("export NODEFLOW_EC2_ENDPOINT=http://127.0.0.1:5123 AWS_REGION=eu-west-1 AWS_ACCESS_KEY_ID=testing "
            "AWS_SECRET_ACCESS_KEY=testing") in text  # what `nodeflow instance-types` needs beside the demo
    assert f"{nf} instance-types --nodepool general" in text
    other = "\n".join(cmd_demo._hints(_stack(None), {"web-b", "web-a"}))
    assert "delete node web-a --wait=false" in other and "do-not-disrupt" not in other
    assert "Temporal UI" not in other


def test_hints_print_a_command_that_runs_from_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """Bare `nodeflow` only when PATH finds it; else this venv's copy, as the README writes it (.venv/bin/nodeflow)."""
    venv_bin = Path(sys.executable).parent
    monkeypatch.setenv("PATH", str(venv_bin))
    assert cmd_demo.command_path("nodeflow") == "nodeflow"
    monkeypatch.setenv("PATH", "")
    monkeypatch.chdir(venv_bin.parent.parent)
    assert cmd_demo.command_path("nodeflow") == os.path.join(venv_bin.parent.name, venv_bin.name, "nodeflow")
    assert cmd_demo.command_path("no-such-tool") == "no-such-tool"


def test_hints_say_how_kubectl_finds_the_plugin(monkeypatch: pytest.MonkeyPatch) -> None:
    """`kubectl nodeflow` fails with `unknown command` until the venv's bin is on PATH: the hint says so, and only
    then."""
    venv_bin = Path(sys.executable).parent
    monkeypatch.setenv("PATH", "")
    monkeypatch.chdir(venv_bin.parent.parent)
    text = "\n".join(cmd_demo._hints(_stack(None), {"general-01"}))
    assert f"export PATH=$PWD/{venv_bin.parent.name}/{venv_bin.name}:$PATH" in text and "kubectl nodeflow" in text
    monkeypatch.setenv("PATH", str(venv_bin))
    assert "export PATH" not in "\n".join(cmd_demo._hints(_stack(None), {"general-01"}))


def test_bundled_scenario_has_work_for_every_method() -> None:
    objs = demo_cluster()
    nodes = [o for o in objs if o["kind"] == "Node"]
    assert len(nodes) == 30
    pools = Counter(n["metadata"]["labels"][L.NODEPOOL_LABEL] for n in nodes)
    assert pools == {"general": 17, "ci": 3, "memory": 3, "batch": 3, "spot": 4}
    pods_on = Counter(o["spec"]["nodeName"] for o in objs if o["kind"] == "Pod")
    ci = [n["metadata"]["name"] for n in nodes if n["metadata"]["labels"][L.NODEPOOL_LABEL] == "ci"]
    assert all(pods_on[name] == 1 for name in ci)  # only the node agent: empty
    assert all(n["spec"]["taints"] for n in nodes if n["metadata"]["name"] in ci)
    # every pod's controller exists with the uid the pod points at (else the simulator makes a second set)
    uids = {o["metadata"].get("uid") for o in objs if o["kind"] in ("ReplicaSet", "DaemonSet")}
    for pod in (o for o in objs if o["kind"] == "Pod"):
        assert pod["metadata"]["ownerReferences"][0]["uid"] in uids, pod["metadata"]["name"]
    rs_pods = Counter(o["metadata"]["ownerReferences"][0]["name"] for o in objs if o["kind"] == "Pod")
    for rs in (o for o in objs if o["kind"] == "ReplicaSet"):
        assert rs["spec"]["replicas"] == rs_pods[rs["metadata"]["name"]]
    spot = [n for n in nodes if n["metadata"]["labels"][L.CAPACITY_TYPE_LABEL] == "spot"]
    assert spot and all(n["spec"]["providerID"].startswith("aws:///") for n in spot)


def test_bundled_scenario_plans_every_planner_method(tmp_path: Path) -> None:
    """The dry run of the scenario (same decision code as the planner) yields every planner method."""
    path = tmp_path / "demo.yaml"
    path.write_text(yaml.safe_dump_all(demo_cluster(), sort_keys=False))
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert run(["plan", "-f", str(path), "--until-stable", "-o", "json"]) == 0
    methods = {c["method"] for c in json.loads(buf.getvalue())["commands"]}
    assert methods == {"Emptiness", "Drift", "MultiNodeConsolidation", "SingleNodeConsolidation", "Expiration"}


def test_live_screen_uses_the_terminals_width() -> None:
    """A 220-column terminal shows a 150-character `latest` line whole (it was cut at ~100); a narrow one cuts each
    line to its width so that no line wraps and the redraw stays in place."""
    from starter.demo_report import describe_workflow, render_live

    summary = "Drift " + ", ".join(f"general-{i:02d}" for i in range(1, 13))
    line = describe_workflow("DisruptionWorkflow", "general-01", "Drifted", "WaitingReady", summary)
    block = render_live(10.0, Counter({"Ready": 30}), Counter(), 1.0, 1.0, None, recent=[line])
    assert len(max(block.splitlines(), key=len)) > 120
    wide = _Tty()
    cmd_demo._LiveScreen(wide, columns=lambda: 220).show(block)
    assert summary + ": WaitingReady" in wide.getvalue()
    narrow = _Tty()
    cmd_demo._LiveScreen(narrow, columns=lambda: 80).show(block)
    assert max(len(row) for row in narrow.getvalue().splitlines()) == 79 and "…" in narrow.getvalue()


async def test_the_live_view_shows_a_disruption_cancelled_through_its_terminations() -> None:
    from contracts.disruption import DisruptionPhase, DisruptionResult
    from contracts.search_attributes import PHASE

    class _Handle:
        def __init__(self, wid: str) -> None:
            self.wid = wid

        async def result(self) -> DisruptionResult:
            return DisruptionResult(outcome=DisruptionPhase.SUCCEEDED, terminations=["terminate-a", "terminate-b"])

        async def describe(self) -> SimpleNamespace:
            return SimpleNamespace(typed_search_attributes={PHASE: "Cancelled"})

    client = SimpleNamespace(get_workflow_handle=lambda wid, **_: _Handle(wid))
    wf = SimpleNamespace(id="disrupt-1", run_id="r1")
    assert await cmd_demo._closed_disruption_phase(client, wf, "Succeeded") == "Cancelled"
    assert await cmd_demo._closed_disruption_phase(client, wf, "RolledBack") == "RolledBack"


async def test_the_settle_reports_the_time_it_took_not_its_limit() -> None:
    """settleSeconds is the limit; settledAfterSeconds what the settle took (None when the limit came first)."""
    running = [["TerminationWorkflow", "InterruptionPollerWorkflow"], ["InterruptionPollerWorkflow"]]

    async def list_workflows(_query: str) -> Any:
        for workflow_type in running[0]:
            yield SimpleNamespace(workflow_type=workflow_type)
        if len(running) > 1:
            running.pop(0)

    pods = SimpleNamespace(list_pod_for_all_namespaces=lambda **_: SimpleNamespace(data=b'{"items": []}'))
    stack = SimpleNamespace(client=SimpleNamespace(list_workflows=list_workflows))
    said: list[str] = []
    took = await cmd_demo._settle(stack, pods, 90.0, said.append, poll=0.01)
    assert took is not None and 0 <= took < 5 and len(said) == 1  # one wait, then quiet: not the 90 s limit
    running[:] = [["TerminationWorkflow"]]
    assert await cmd_demo._settle(stack, pods, 0.05, said.append, poll=0.01) is None


def test_the_spot_warning_goes_to_a_node_no_other_method_is_taking_down() -> None:
    """A warning for a node already terminating only moves that termination's deadline, and the report would
    count no Interruption command (one eu-west-1 demo run of five met this)."""
    def spot(name: str, **extra: Any) -> dict[str, Any]:
        node = {"metadata": {"name": name, "labels": {L.CAPACITY_TYPE_LABEL: "spot"}}, "spec": {}}
        node["metadata"].update(extra.get("metadata", {}))
        node["spec"].update(extra.get("spec", {}))
        return node

    assert cmd_demo._interruptible(spot("free"))
    assert not cmd_demo._interruptible(spot("deleting", metadata={"deletionTimestamp": "2026-11-30T12:00:00Z"}))
    assert not cmd_demo._interruptible(spot("disrupted", spec={"taints": [dict(L.DISRUPTED_TAINT)]}))
    on_demand = spot("od")
    on_demand["metadata"]["labels"][L.CAPACITY_TYPE_LABEL] = "on-demand"
    assert not cmd_demo._interruptible(on_demand)
