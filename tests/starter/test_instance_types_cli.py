"""`nodeflow instance-types` as a user runs it: a real process, the standard AWS environment (AWS_REGION,
AWS_ENDPOINT_URL, credentials) pointing at the devstack's EC2 stand-in (moto's real DescribeInstanceTypes data, spot
price history, the Pricing API), no kubeconfig."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from api.instance_types import labels as T
from api.quantity import parse_cpu, parse_memory
from api.yaml_load import safe_load
from tests.api.test_allocatable import EXPECTED

ROOT = Path(__file__).resolve().parents[2]
# libyaml's safe loader where PyYAML has it: the same safe YAML, parsed ~6x faster than the pure-Python one (17 s of
# this file's run went to reading the CLI's YAML)


def _run(endpoint: str, region: str, *argv: str) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "KUBECONFIG"))}
    env.update({"AWS_REGION": region, "AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "testing",
                "AWS_SECRET_ACCESS_KEY": "testing", "HOME": "/nonexistent"})
    proc = subprocess.run([sys.executable, "-m", "starter.cli", "instance-types", *argv], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    return proc.returncode, proc.stdout, proc.stderr


def _cheapest(row: dict[str, Any]) -> float:
    return min((o["price"] for o in row["offerings"] if o["available"]), default=float("inf"))


def test_every_type_of_the_region_with_karpenters_allocatable(cloud_endpoint: str) -> None:
    code, out, err = _run(cloud_endpoint, "us-east-1", "-o", "json")
    assert code == 0, err
    assert "DescribeInstanceTypes in us-east-1" in err  # progress goes to stderr, the JSON alone to stdout
    rows = json.loads(out)
    by_name = {r["name"]: r for r in rows}
    assert len(rows) > 400
    for name, (cpu_milli, mem_mib, pods) in EXPECTED.items():
        alloc = by_name[name]["allocatable"]
        assert set(alloc) == {"cpu", "memory", "pods"}
        assert round(parse_cpu(alloc["cpu"]) * 1000) == cpu_milli, name
        assert abs(parse_memory(alloc["memory"]) - mem_mib * 2**20) <= 2**20, name
        assert int(alloc["pods"]) == pods, name
    m5 = by_name["m5.large"]
    assert m5["capacity"]["cpu"] == "2" and m5["capacity"]["memory"] == "7577Mi" and m5["capacity"]["pods"] == "29"
    assert m5["labels"][T.FAMILY] == "m5" and m5["labels"]["topology.kubernetes.io/region"] == "us-east-1"
    assert by_name["p4d.24xlarge"]["capacity"]["nvidia.com/gpu"] == "8"
    offering = m5["offerings"][0]
    assert set(offering) == {"zone", "capacityType", "price", "available"}
    assert all(o["zone"].startswith("us-east-1") for r in rows for o in r["offerings"])
    cheapest = [_cheapest(r) for r in rows]
    assert cheapest == sorted(cheapest)


def test_a_pool_and_class_of_a_snapshot_in_another_region(cloud_endpoint: str, tmp_path: Path) -> None:
    """eu-west-1; the pool allows generation > 6 only; the class's subnets are in eu-west-1a and its kubelet
    caps pods at 20 and reserves 100m / 200Mi for the system."""
    pool = {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "new-gen"}, "spec": {
        "template": {"spec": {
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "capped"},
            "requirements": [{"key": T.GENERATION, "operator": "Gt", "values": ["6"]},
                             {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}]}}}}
    node_class = {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": "capped"},
                  "spec": {"amiSelectorTerms": [{"alias": "al2023@latest"}], "role": "r",
                           "subnetSelectorTerms": [{"tags": {"k": "v"}}],
                           "securityGroupSelectorTerms": [{"tags": {"k": "v"}}],
                           "kubelet": {"maxPods": 20, "systemReserved": {"cpu": "100m", "memory": "200Mi"}}},
                  "status": {"subnets": [{"id": "subnet-1", "zone": "eu-west-1a"}]}}
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all([pool, node_class]))
    code, out, err = _run(cloud_endpoint, "eu-west-1", "--nodepool", "new-gen", "-f", str(path), "-o", "yaml")
    assert code == 0, err
    rows = safe_load(out)
    assert rows
    for r in rows:
        assert int(r["labels"][T.GENERATION]) > 6
        assert r["allocatable"]["pods"] == "20"
        assert {(o["zone"], o["capacityType"]) for o in r["offerings"]} == {("eu-west-1a", "on-demand")}
    c7i = next((r for r in rows if r["name"] == "c7i.large"), None)
    if c7i is not None:  # 2 vCPU: 1930m less 100m; 4096 MiB: 4096-308=3788, less 11*29+255=574, 200 and 100
        assert c7i["allocatable"]["cpu"] == "1830m" and c7i["allocatable"]["memory"] == "2914Mi"


def test_no_region_is_a_usage_error(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    proc = subprocess.run([sys.executable, "-m", "starter.cli", "instance-types"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "AWS_REGION" in proc.stderr


def test_offline_with_the_bundled_catalog_as_a_table(capsys: Any, monkeypatch: Any) -> None:
    """--catalog needs no AWS at all; the table lists one line per type, cheapest first."""
    from api.catalog import DEFAULT_CATALOG_PATH
    from starter import cli

    monkeypatch.setenv("AWS_REGION", "us-east-1")
    assert cli.run(["instance-types", "--catalog", str(DEFAULT_CATALOG_PATH)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:3] == ["NAME", "CPU", "MEMORY"]
    assert lines[1].split()[0] == "t3.medium" and "1930m" in lines[1] and "3246Mi" in lines[1]
    assert len(lines) == 1 + 48
