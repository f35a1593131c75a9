"""`nodeflow plan` on examples/README.md, through the real CLI entry point (starter.cli.run)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from starter.cli import run

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
AT = "2026-11-22T20:00:00Z"


def _plan(capsys, name, *extra):
    code = run(["plan", "-f", str(EXAMPLES / name), "--at", AT, "-o", "json", *extra])
    out = capsys.readouterr().out
    assert code == 0
    return json.loads(out)


def test_consolidate_example_replaces_the_pair_with_one_cheaper_node(capsys):
    data = _plan(capsys, "plan-consolidate.yaml")
    (cmd,) = data["commands"]
    assert cmd["method"] == "MultiNodeConsolidation" and cmd["reason"] == "Underutilized"
    assert sorted(cmd["nodes"]) == ["node-a", "node-b"]
    (rep,) = cmd["replacements"]
    assert rep["capacityType"] == "on-demand" and rep["price"] < 2 * 0.384
    assert cmd["savingsPerHour"] == pytest.approx(2 * 0.384 - rep["price"])
    assert {m["to"] for m in cmd["pods"]} == {"new-0"} and len(cmd["pods"]) == 3
    assert data["final"] == {"nodes": 1, "costPerHour": rep["price"], "passes": 1}


def test_empty_example_deletes_the_empty_node(capsys):
    (cmd,) = _plan(capsys, "plan-empty.yaml")["commands"]
    assert (cmd["method"], cmd["nodes"], cmd["replacements"]) == ("Emptiness", ["node-b"], [])


def test_drift_example_replaces_the_drifted_node(capsys):
    (cmd,) = _plan(capsys, "plan-drift.yaml")["commands"]
    assert (cmd["method"], cmd["reason"], cmd["nodes"]) == ("Drift", "Drifted", ["node-a"])
    assert len(cmd["replacements"]) == 1 and cmd["pods"] == [{"pod": "default/web-1", "to": "new-0"}]


def test_do_not_disrupt_example_blocks_the_annotated_node(capsys):
    data = _plan(capsys, "plan-do-not-disrupt.yaml")
    assert [c["nodes"] for c in data["commands"]] == [["node-c"]]
    assert data["blocked"] == [{"node": "node-b", "reason":
                                'disruption is blocked through the "karpenter.sh/do-not-disrupt" annotation'}]


def test_pdb_example_blocks_the_node(capsys):
    data = _plan(capsys, "plan-pdb.yaml")
    assert data["commands"] == []
    assert data["blocked"] == [{"node": "node-b", "reason": "pdb default/web prevents pod evictions"}]


def test_expired_example_deletes_without_budget_or_replacement(capsys):
    (cmd,) = _plan(capsys, "plan-expired.yaml")["commands"]
    assert (cmd["method"], cmd["reason"], cmd["nodes"], cmd["replacements"]) == \
        ("Expiration", "Expired", ["node-old"], [])
    assert cmd["pods"] == [{"pod": "default/web-1", "to": "node-new"}]


def test_json_shape_is_exactly_the_contract(capsys):
    data = _plan(capsys, "plan-consolidate.yaml")
    # §3.1 adds provisioning and nodePoolsBlocked, §3.2 node repair
    assert list(data)[:7] == ["at", "budgets", "commands", "blocked", "final", "provisioning", "nodePoolsBlocked"]
    assert {"repairs", "repairsBlocked"} <= set(data) and data["repairs"] == data["repairsBlocked"] == []
    assert data["at"] == AT
    assert set(data["budgets"][0]) == {"nodePool", "reason", "limit", "total", "disrupting", "allowed", "errors"}
    assert list(data["commands"][0]) == ["method", "reason", "nodePool", "nodes", "replacements", "savingsPerHour",
                                         "pods"]
    assert set(data["commands"][0]["replacements"][0]) <= {"instanceTypes", "capacityType", "price", "zone",
                                                           "nodePool", "requirements"}


def test_until_stable_and_yaml_output(capsys):
    code = run(["plan", "-f", str(EXAMPLES / "plan-consolidate.yaml"), "--at", AT, "--until-stable", "-o", "yaml"])
    data = yaml.safe_load(capsys.readouterr().out)
    assert code == 0 and data["final"]["passes"] >= 2 and data["final"]["nodes"] == 1


def test_table_explains_commands_and_blocked_nodes(capsys):
    assert run(["plan", "-f", str(EXAMPLES / "plan-consolidate.yaml"), "--at", AT]) == 0
    out = capsys.readouterr().out
    assert "MultiNodeConsolidation (Underutilized, nodepool default): replace" in out
    assert "pod default/web-1 -> new-0" in out and "saves $" in out and "FINAL: 1 nodes" in out
    assert run(["plan", "-f", str(EXAMPLES / "plan-pdb.yaml"), "--at", AT, "-o", "table"]) == 0
    out = capsys.readouterr().out
    assert "BLOCKED (1)" in out and "node-b   pdb default/web prevents pod evictions" in out


def test_catalog_flag_replaces_the_default_catalog(tmp_path, capsys):
    catalog = {"apiVersion": "nodeflow.dev/v1alpha1", "kind": "InstanceTypeCatalog", "metadata": {"name": "x"},
               "instanceTypes": [{"name": "m5.large", "cpu": "2", "memory": "8Gi", "pods": 29, "offerings": [
                   {"zone": "us-east-1a", "capacityType": "on-demand", "price": 1.0}]}]}
    path = tmp_path / "catalog.yaml"
    path.write_text(yaml.safe_dump(catalog))
    data = _plan(capsys, "plan-empty.yaml", "--catalog", str(path))
    assert data["commands"][0]["savingsPerHour"] == 1.0


def test_errors_are_actionable(tmp_path, capsys):
    assert run(["plan", "-f", str(tmp_path / "missing.yaml")]) == 1
    assert "No such file" in capsys.readouterr().err
    assert run(["plan", "-f", str(EXAMPLES / "plan-empty.yaml"), "--at", "yesterday"]) == 2
    assert "RFC3339" in capsys.readouterr().err
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: Pod\napiVersion: v1\nmetadata: {}\n")
    assert run(["plan", "-f", str(bad)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err


def test_ami_drift_example_replaces_the_node_on_the_old_image(capsys):
    """A NodeClaim whose status.imageID is no longer the image its EC2NodeClass resolves to is drifted (AMIDrift)."""
    (cmd,) = _plan(capsys, "plan-ami-drift.yaml")["commands"]
    assert (cmd["method"], cmd["reason"], cmd["nodes"]) == ("Drift", "Drifted", ["node-a"])
    assert len(cmd["replacements"]) == 1


def test_no_ami_drift_when_every_node_runs_the_resolved_image(capsys, tmp_path):
    text = (EXAMPLES / "plan-ami-drift.yaml").read_text().replace("ami-0abc0000000000001", "ami-0xyz0000000000002")
    snapshot = tmp_path / "current.yaml"
    snapshot.write_text(text)
    code = run(["plan", "-f", str(snapshot), "--at", AT, "-o", "json"])
    assert code == 0
    assert json.loads(capsys.readouterr().out)["commands"] == []



def _plan_json(capsys, path: Path) -> dict:
    code = run(["plan", "-f", str(path), "--at", AT, "-o", "json"])
    assert code == 0
    return json.loads(capsys.readouterr().out)


def _node_class_doc(name: str) -> str:
    docs = (EXAMPLES / "plan-ami-drift.yaml").read_text().split("\n---\n")
    (doc,) = [d for d in docs if "\nkind: EC2NodeClass" in "\n" + d]
    return doc.replace("  name: default\n", f"  name: {name}\n", 1)


def test_a_drift_replacement_for_a_pool_whose_class_is_missing_is_blocked(capsys, tmp_path):
    """The cluster has EC2NodeClasses but not the one the NodePool names: no replacement can launch (the launcher
    refuses), so the drifted node is blocked with that reason instead of a command that would fail."""
    path = tmp_path / "missing.yaml"
    path.write_text((EXAMPLES / "plan-drift.yaml").read_text() + "\n---\n" + _node_class_doc("other"))
    data = _plan_json(capsys, path)
    assert data["commands"] == []
    assert [(b["node"], b["reason"]) for b in data["blocked"]] == [("node-a", "EC2NodeClass default not found")]
    assert data["nodePoolsBlocked"] == [{"nodePool": "default", "reason": "EC2NodeClass default not found"}]
    assert run(["plan", "-f", str(path), "--at", AT]) == 0
    table = capsys.readouterr().out
    assert "NODEPOOLS THAT CANNOT LAUNCH (1)" in table and "EC2NodeClass default not found" in table


def test_every_pool_can_launch_from_a_ready_class(capsys):
    assert _plan(capsys, "plan-ami-drift.yaml")["nodePoolsBlocked"] == []


def test_a_drift_replacement_from_a_class_that_is_not_ready_is_blocked(capsys, tmp_path):
    path = tmp_path / "not-ready.yaml"
    text = (EXAMPLES / "plan-ami-drift.yaml").read_text()
    ready = "    status: 'True'\n    reason: Ready\n"
    assert ready in text
    path.write_text(text.replace(ready, "    status: 'False'\n    reason: SubnetsNotFound\n"
                                        "    message: SubnetsReady=False\n"))
    data = _plan_json(capsys, path)
    assert data["commands"] == []
    assert [(b["node"], b["reason"]) for b in data["blocked"]] == [
        ("node-a", "EC2NodeClass default not Ready: SubnetsReady=False")]


def test_provision_example_launches_for_the_pods_no_node_or_launching_claim_takes(capsys):
    data = _plan(capsys, "plan-provision.yaml")
    (launch,) = data["provisioning"]
    assert set(launch) == {"nodePool", "instanceTypes", "capacityType", "pods"}
    assert (launch["nodePool"], launch["capacityType"], launch["pods"]) == ("default", "on-demand", ["default/web-2"])
    assert launch["instanceTypes"][0] == "t3.medium" and len(launch["instanceTypes"]) > 1
    assert data["commands"] == [] and data["final"]["nodes"] == 1  # the existing fields are unchanged


def test_provision_example_table_shows_launches_and_the_pod_no_pool_serves(capsys):
    assert run(["plan", "-f", str(EXAMPLES / "plan-provision.yaml"), "--at", AT, "-o", "table"]) == 0
    out = capsys.readouterr().out
    assert "PROVISIONING (1 NodeClaim(s))" in out and "pod default/web-2" in out
    assert "default/mars-0" in out and "nodeSelector topology.kubernetes.io/zone=mars-1a" in out


def test_a_snapshot_without_pending_pods_provisions_nothing(capsys):
    assert _plan(capsys, "plan-empty.yaml")["provisioning"] == []


def test_repair_example_repairs_the_node_past_its_toleration_and_holds_back_the_unhealthy_pool(capsys):
    """v1.15 by default: the repair is a command of the Repair method (Unhealthy budget); the 20% valve still holds."""
    data = _plan(capsys, "plan-repair.yaml")
    assert [(c["method"], c["reason"], c["nodes"]) for c in data["commands"]] == \
        [("Repair", "Unhealthy", ["default-sick"])]
    assert data["repairs"] == [] and data["repairsVetoed"] == []
    (held,) = data["repairsBlocked"]
    assert (held["nodePool"], held["reason"], held["unhealthy"], held["nodes"], held["held"]) == \
        ("batch", "NodePoolUnhealthy", 2, 3, ["batch-0", "batch-1"])
    assert _plan(capsys, "plan-repair.yaml", "--node-repair-toleration", "1h")["commands"] == []


def test_legacy_node_repair_flag_plans_the_forceful_repair(capsys):
    data = _plan(capsys, "plan-repair.yaml", "--legacy-node-repair")
    assert data["repairs"] == [{"node": "default-sick", "nodePool": "default", "condition": "Ready", "status": "False",
                                "since": "2026-11-22T19:15:00Z", "tolerationSeconds": 1800}]
    assert data["commands"] == [] and [b["nodePool"] for b in data["repairsBlocked"]] == ["batch"]
    assert _plan(capsys, "plan-repair.yaml", "--legacy-node-repair", "--node-repair-toleration", "1h")["repairs"] == []
    assert run(["plan", "-f", str(EXAMPLES / "plan-repair.yaml"), "--at", AT, "-o", "table",
                "--legacy-node-repair"]) == 0
    out = capsys.readouterr().out
    assert "NODE REPAIR (1)" in out and "default-sick" in out and "held back: more than 20% nodes are unhealthy" in out


def test_pending_capacity_example_keeps_the_fresh_node_its_pending_pods_fit_on(capsys):
    """A node launched for pending pods is not consolidated before kube-scheduler binds them."""
    data = _plan(capsys, "plan-pending-capacity.yaml")
    assert [(c["method"], c["nodes"]) for c in data["commands"]] == [("Emptiness", ["node-busy"])]
    (blocked,) = data["blocked"]
    assert blocked["node"] == "node-fresh"
    assert blocked["reason"].startswith("pending pod default/web-") and "node-fresh" in blocked["reason"]


def test_deleting_node_example_provisions_the_pods_its_pdb_holds(capsys):
    """A node deleted by hand and drained behind a PDB gets its replacement while it drains."""
    data = _plan(capsys, "plan-deleting-node.yaml")
    (launch,) = data["provisioning"]
    assert sorted(launch["pods"]) == ["default/db-1", "default/db-2"] and data["commands"] == []


def test_default_topology_spread_flag_is_applied_and_shown(capsys, tmp_path):
    """`--default-topology-spread` is the worker's setting for the dry run; `scheduling` reports it (docs/contracts.md
    §3.1, docs/semantics.md §3.5); a bad value is refused with the flag named."""
    data = _plan(capsys, "plan-consolidate.yaml")
    assert data["scheduling"] == {"defaultTopologySpread": {"mode": "none", "source": None, "constraints": [],
                                                            "podsDefaulted": 0}, "podsResizing": 0,
                                "podsVolumeLimited": 0}
    data = _plan(capsys, "plan-consolidate.yaml", "--default-topology-spread", "system")
    spread = data["scheduling"]["defaultTopologySpread"]
    assert spread["mode"] == "system" and [c["maxSkew"] for c in spread["constraints"]] == [3, 5]
    assert spread["podsDefaulted"] > 0
    code = run(["plan", "-f", str(EXAMPLES / "plan-consolidate.yaml"), "--at", AT, "--default-topology-spread",
                "system", "-o", "table"])
    assert code == 0 and "SCHEDULING: default topology spread system" in capsys.readouterr().out
    bad = tmp_path / "spread.yaml"
    bad.write_text("- {maxSkew: 1, topologyKey: k, whenUnsatisfiable: DoNotSchedule, labelSelector: {}}\n")
    assert run(["plan", "-f", str(EXAMPLES / "plan-consolidate.yaml"), "--default-topology-spread", str(bad)]) != 0
    assert "--default-topology-spread" in capsys.readouterr().err


def test_v115_plan_shows_the_pod_deletion_cost_order(capsys):
    """`deletionCost` (kubernetes-sigs/karpenter#2894, docs/semantics.md §3.6): the nodes in the order the
    PodDeletionCostManagement controller would mark their ReplicaSet pods, the lowest cost (emptied first) first;
    it is the pass's own order, so the command's first node leads."""
    data = _plan(capsys, "plan-consolidate.yaml")
    rows = data["deletionCost"]
    assert [r["node"] for r in rows][:1] == data["commands"][0]["nodes"][:1]
    costs = [r["cost"] for r in rows if r["cost"] is not None]
    assert costs == sorted(costs) and all(c < 0 for c in costs) and len(set(costs)) == len(costs)
    assert all(r["tier"] == "consolidatable" and r["pods"] >= 1 for r in rows)
    assert run(["plan", "-f", str(EXAMPLES / "plan-consolidate.yaml"), "--at", AT, "-o", "table"]) == 0
    assert "POD DELETION COST (2 node(s), first emptied first): node-b (consolidatable, " in capsys.readouterr().out
