"""A NodeOverlay in the snapshot changes what `nodeflow plan` decides, and `nodeflow validate` checks it.

examples/plan-consolidate.yaml: two m5.2xlarge ($0.384/h each) run 2.5 vCPU of pods. Without an overlay the plan
replaces both with one c6a.xlarge ($0.153/h). A Savings Plan making m5 80% cheaper turns the replacement into an
m5.xlarge; a reservation pricing m5.2xlarge at $0.05/h makes any replacement dearer than the pair, so only the
delete of one node (its pods fit on the other) is left.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from starter.cli import run

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
AT = "2026-11-22T20:00:00Z"


def overlay(name: str, requirements: list[dict], **spec: object) -> dict:
    return {"apiVersion": "karpenter.sh/v1alpha1", "kind": "NodeOverlay", "metadata": {"name": name},
            "spec": {"requirements": requirements, **spec}}


def plan(capsys: pytest.CaptureFixture[str], tmp_path: Path, *extra: dict) -> dict:
    path = tmp_path / "snapshot.yaml"
    path.write_text((EXAMPLES / "plan-consolidate.yaml").read_text() + "---\n" + yaml.safe_dump_all(extra))
    assert run(["plan", "-f", str(path), "--at", AT, "-o", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def decision(data: dict) -> list[tuple[str, list[str], list[str], float]]:
    return [(c["method"], sorted(c["nodes"]), [r["instanceTypes"][0] for r in c["replacements"]],
             round(c["savingsPerHour"], 4)) for c in data["commands"]]


def test_without_an_overlay_the_pair_is_replaced_by_a_c6a(capsys, tmp_path) -> None:
    data = plan(capsys, tmp_path)
    assert decision(data) == [("MultiNodeConsolidation", ["node-a", "node-b"], ["c6a.xlarge"], 0.615)]
    assert data["nodeOverlays"] == []


def test_the_table_lists_overlays_and_conflicts(capsys, tmp_path) -> None:
    m5 = [{"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["m5"]}]
    path = tmp_path / "snapshot.yaml"
    path.write_text((EXAMPLES / "plan-consolidate.yaml").read_text() + "---\n" + yaml.safe_dump_all(
        [overlay("a", m5, price="1"), overlay("b", m5, price="2")]))
    assert run(["plan", "-f", str(path), "--at", AT, "-o", "table"]) == 0
    out = capsys.readouterr().out
    assert "NODEOVERLAYS (2)" in out
    (line_a,) = [ln for ln in out.splitlines() if ln.startswith("a ")]
    assert line_a.split()[1:3] == ["0", "0"] and line_a.endswith("conflict: applied nowhere")


def test_a_savings_plan_overlay_changes_the_replacement_type(capsys, tmp_path) -> None:
    sp = overlay("m5-savings-plan", [{"key": "karpenter.k8s.aws/instance-family", "operator": "In",
                                      "values": ["m5"]}], priceAdjustment="-80%")
    data = plan(capsys, tmp_path, sp)
    # the pair now costs 2 * 0.0768; an m5.xlarge at 0.0384 is the one type cheaper than that with room
    assert decision(data) == [("MultiNodeConsolidation", ["node-a", "node-b"], ["m5.xlarge"], 0.1152)]
    assert data["final"]["costPerHour"] == pytest.approx(0.0384)
    (row,) = data["nodeOverlays"]
    assert row == {"name": "m5-savings-plan", "weight": 0, "offeringsPriced": row["offeringsPriced"],
                   "typesGivenCapacity": 0, "conflict": False} and row["offeringsPriced"] > 0


def test_a_reservation_overlay_leaves_no_cheaper_replacement(capsys, tmp_path) -> None:
    ri = overlay("m5-2xlarge-reserved", [{"key": "node.kubernetes.io/instance-type", "operator": "In",
                                          "values": ["m5.2xlarge"]}], price="0.05")
    data = plan(capsys, tmp_path, ri)
    assert decision(data) == [("SingleNodeConsolidation", ["node-b"], [], 0.05)]
    assert data["final"] == {"nodes": 1, "costPerHour": 0.05, "passes": 1}


def test_validate_reports_overlay_problems_and_conflicts(capsys, tmp_path) -> None:
    m5 = [{"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["m5"]}]
    path = tmp_path / "overlays.yaml"
    path.write_text(yaml.safe_dump_all([overlay("a", m5, price="1"), overlay("b", m5, price="2"),
                                        overlay("c", m5, price="1", priceAdjustment="+1")]))
    assert run(["validate", "-f", str(path)]) == 1
    out, err = capsys.readouterr()
    assert "document 3 (NodeOverlay/c): spec: cannot set both 'price' and 'priceAdjustment'" in out
    assert "document 1 (NodeOverlay/a): conflicts with another NodeOverlay of weight 0" in err
    assert "NodeOverlay/b" not in err  # b (later in the alphabet) is the one applied


def test_the_example_overlays_validate(capsys) -> None:
    assert run(["validate", "-f", str(EXAMPLES / "nodeoverlay.yaml")]) == 0


@pytest.mark.parametrize(("pool", "expected"), [
    ("default", [("SingleNodeConsolidation", ["node-b"], [], 0.05)]),
    ("other", [("MultiNodeConsolidation", ["node-a", "node-b"], ["c6a.xlarge"], 0.615)]),
])
def test_an_overlay_for_one_nodepool_prices_only_that_pool(capsys, tmp_path, pool, expected) -> None:
    ri = overlay("m5-2xlarge-reserved", [{"key": "karpenter.sh/nodepool", "operator": "In", "values": [pool]},
                                         {"key": "node.kubernetes.io/instance-type", "operator": "In",
                                          "values": ["m5.2xlarge"]}], price="0.05")
    data = plan(capsys, tmp_path, ri)
    assert decision(data) == expected
    assert data["nodeOverlays"][0]["offeringsPriced"] == (6 if pool == "default" else 0)


def test_validate_judges_conflicts_in_the_files_nodepools(capsys, tmp_path) -> None:
    """Overlay a selects everything in pool web; b every m5 anywhere: in pool web both select m5 at weight 0."""
    pool = yaml.safe_load((EXAMPLES / "plan-consolidate.yaml").read_text().split("---")[1])
    pool["metadata"]["name"] = "web"
    path = tmp_path / "overlays.yaml"
    web = [{"key": "karpenter.sh/nodepool", "operator": "In", "values": ["web"]}]
    m5 = [{"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["m5"]}]
    path.write_text(yaml.safe_dump_all([pool, overlay("a", web, price="0.05"), overlay("b", m5, price="0.06")]))
    assert run(["validate", "-f", str(path)]) == 0
    assert "(NodeOverlay/a): conflicts with another NodeOverlay" in capsys.readouterr().err
    path.write_text(yaml.safe_dump_all([overlay("a", web, price="0.05"), overlay("b", m5, price="0.06")]))
    assert run(["validate", "-f", str(path)]) == 0  # no pool web in the file: a selects nothing, no conflict
    assert "conflicts with another NodeOverlay" not in capsys.readouterr().err
