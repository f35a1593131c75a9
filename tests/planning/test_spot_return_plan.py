"""`nodeflow plan` explains spot fallbacks and zone balance (docs/semantics.md §15.5-15.6): `spotFallbacks` and
`zoneBalance` in its JSON, and their tables."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import yaml
from planning_factory import AT, node_and_claim, nodepool, pod, ts

from api import labels as L
from api.policy_controls import SPOT_FALLBACK_ANNOTATION
from starter.cli import run

BOTH = [{"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["spot", "on-demand"]},
        {"key": L.ARCH_LABEL, "operator": "In", "values": ["amd64"]},
        {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["m5"]}]


def _policy(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "nodeflow.dev/v1alpha1", "kind": "DisruptionPolicy", "metadata": {"name": "spot"},
            "spec": {"nodePools": ["default"], **spec}}


def _fallback(name: str, ago: timedelta, zone: str = "us-east-1a") -> list[dict[str, Any]]:
    return node_and_claim(name, "m5.xlarge", zone=zone, claim_annotations={SPOT_FALLBACK_ANNOTATION: ts(AT - ago)})


def _plan(tmp_path: Path, capsys: Any, objs: list[Any], output: str = "json") -> Any:
    path = tmp_path / "snap.yaml"
    path.write_text(yaml.safe_dump_all(objs))
    assert run(["plan", "-f", str(path), "--at", ts(AT), "-o", output]) == 0
    out = capsys.readouterr().out
    return json.loads(out) if output == "json" else out


def test_plan_lists_each_fallback_with_its_return(tmp_path: Path, capsys: Any) -> None:
    objs = [nodepool(consolidate_after="Never", requirements=BOTH),
            *_fallback("due", timedelta(hours=1)), pod("web-1", "due", cpu="1500m"),
            *_fallback("fresh", timedelta(minutes=5), zone="us-east-1b"), pod("api-1", "fresh", cpu="1500m"),
            _policy(spot={"returnAfter": "30m"}, provisioning={"zoneBalance": 1})]
    data = _plan(tmp_path, capsys, objs)
    assert [(c["method"], c["nodes"]) for c in data["commands"]] == [("SpotReturn", ["due"])]
    rows = {r["node"]: r for r in data["spotFallbacks"]}
    assert rows["due"]["state"] == "Returning" and rows["due"]["since"] == ts(AT - timedelta(hours=1))
    assert rows["fresh"] == {"node": "fresh", "nodePool": "default", "since": ts(AT - timedelta(minutes=5)),
                             "returnAt": ts(AT + timedelta(minutes=25)), "state": "Waiting", "reason": None}
    assert data["zoneBalance"] == [{"nodePool": "default", "zoneBalance": 1, "spread": 0,
                                    "nodesByZone": {"us-east-1a": 1, "us-east-1b": 1}}]
    table = _plan(tmp_path, capsys, objs, "table")
    assert "SPOT FALLBACKS (2)" in table and "ZONE BALANCE (1)" in table


def test_without_a_return_after_a_fallback_is_kept(tmp_path: Path, capsys: Any) -> None:
    objs = [nodepool(consolidate_after="Never", requirements=BOTH), *_fallback("od", timedelta(hours=1)),
            pod("web-1", "od", cpu="1500m")]
    data = _plan(tmp_path, capsys, objs)
    assert data["commands"] == [] and data["zoneBalance"] == []
    assert [(r["node"], r["state"], r["returnAt"]) for r in data["spotFallbacks"]] == [("od", "Kept", None)]
