"""`nodeflow validate -f FILE` through the CLI entry point."""

from pathlib import Path

import pytest
import yaml

from starter.cli import run

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

BAD = """\
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: web
spec:
  template:
    spec:
      requirements: []
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
  disruption:
    consolidateAfter: 1.5h
    budgets:
    - nodes: "10%"
    - nodes: "0"
      schedule: "0 9 * * 1-5"
---
apiVersion: v1
kind: ConfigMap
metadata: {}
"""


def test_valid_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["validate", "-f", str(EXAMPLES / "nodepool-maintenance-window.yaml")]) == 0
    out = capsys.readouterr()
    assert out.out == "valid\n"
    assert "1 object(s) checked" in out.err


def test_every_problem_is_printed_with_its_location(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "pools.yaml"
    path.write_text(BAD)
    assert run(["validate", "-f", str(path)]) == 1
    out = capsys.readouterr()
    assert out.out.splitlines() == [
        f"{path}: document 1 (NodePool/web): spec.disruption.consolidateAfter: '1.5h' does not match "
        "^(([0-9]+(s|m|h))+|Never)$",
        f"{path}: document 1 (NodePool/web): spec.disruption.budgets[1]: 'schedule' must be set with 'duration'",
        f"{path}: document 2 (ConfigMap/?): metadata.name: required field is missing",
    ]
    assert "3 problem(s) found" in out.err


def test_deprecated_alias_warns_but_passes(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["validate", "-f", str(EXAMPLES / "nodepool-aks-nap.yaml")]) == 0
    err = capsys.readouterr().err
    assert "warning: " in err and "spec.disruption.expireAfter is deprecated" in err


def test_several_files_and_lists(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pool = yaml.safe_load((EXAMPLES / "nodepool-maintenance-window.yaml").read_text())
    listed = tmp_path / "list.yaml"
    broken = yaml.safe_load(yaml.safe_dump(pool))
    broken["spec"]["weight"] = 500
    listed.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [pool, broken]}))
    code = run(["validate", "-f", str(EXAMPLES / "nodepool-maintenance-window.yaml"), "-f", str(listed)])
    assert code == 1
    assert capsys.readouterr().out.splitlines() == [
        f"{listed}: document 1 item 2 (NodePool/office-hours): spec.weight: must be between 1 and 100, got 500"
    ]


def test_unreadable_and_malformed_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["validate", "-f", str(tmp_path / "nope.yaml")]) == 1
    assert "nope.yaml: cannot read" in capsys.readouterr().out
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: NodePool\nspec: [\n")
    assert run(["validate", "-f", str(bad)]) == 1
    assert "bad.yaml: document 1: invalid YAML at line" in capsys.readouterr().out
    empty = tmp_path / "empty.yaml"
    empty.write_text("---\n")
    assert run(["validate", "-f", str(empty)]) == 1
    assert "error: " in capsys.readouterr().err


def test_a_directory_as_kubectl_reads_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`-f DIR`: its .json/.yaml/.yml files in name order (others skipped); `-R` adds the subdirectories' (it was
    "Is a directory")."""
    good = (EXAMPLES / "nodepool-maintenance-window.yaml").read_text()
    (tmp_path / "b.yml").write_text(good)
    (tmp_path / "a.yaml").write_text(BAD)
    (tmp_path / "notes.txt").write_text("not a manifest: {")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "c.json").write_text('{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}')
    assert run(["validate", "-f", str(tmp_path)]) == 1
    out = capsys.readouterr()
    assert [line.split(":")[0] for line in out.out.splitlines()] == [str(tmp_path / "a.yaml")] * 3
    checked = [line for line in out.err.splitlines() if "object(s) checked" in line]
    assert checked == [f"{tmp_path / 'a.yaml'}: 2 object(s) checked", f"{tmp_path / 'b.yml'}: 1 object(s) checked"]
    assert run(["validate", "-R", "-f", str(tmp_path)]) == 1
    out = capsys.readouterr()
    assert out.out.splitlines()[-1] == f"{tmp_path / 'sub' / 'c.json'}: document 1 (ConfigMap/?): metadata.name: " \
                                       "required field is missing"
    assert out.err.count("object(s) checked") == 3


def test_a_directory_without_manifests(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "pool.yaml").write_text((EXAMPLES / "nodepool-maintenance-window.yaml").read_text())
    assert run(["validate", "-f", str(tmp_path)]) == 1
    assert "no .json, .yaml, .yml files in this directory (-R reads its subdirectories too)" in capsys.readouterr().err
    assert run(["validate", "--recursive", "-f", str(tmp_path)]) == 0
    assert capsys.readouterr().out == "valid\n"
