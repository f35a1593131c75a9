"""`nodeflow validate` on CapacityBuffer manifests (docs/semantics.md §20): the CRD's rules, offline."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from api.capacity_buffer import ONE_REF_MESSAGE, PODTEMPLATE_NEEDS_COUNT_MESSAGE, validate_capacity_buffer
from starter.cli import run


def cb(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "autoscaling.x-k8s.io/v1beta1", "kind": "CapacityBuffer",
            "metadata": {"name": "b", "namespace": "shop"}, "spec": spec}


def test_each_rule_of_the_crd_is_a_problem_with_its_path() -> None:
    assert validate_capacity_buffer(cb(scalableRef={"kind": "Deployment", "name": "web"}, percentage=20)) == []
    assert validate_capacity_buffer(cb(podTemplateRef={"name": "t"})) == [f"spec: {PODTEMPLATE_NEEDS_COUNT_MESSAGE}"]
    assert validate_capacity_buffer(cb(podTemplateRef={"name": "t"}, scalableRef={"kind": "Deployment", "name": "w"},
                                       replicas=1)) == [f"spec: {ONE_REF_MESSAGE}"]
    assert validate_capacity_buffer(cb(replicas=-1)) == ["spec.replicas: Input should be greater than or equal to 0"]
    assert validate_capacity_buffer({**cb(), "spec": None}) == ["spec: required field is missing"]


def test_the_cli_reports_a_bad_buffer_and_a_misspelt_kind(tmp_path: Path, capsys: Any) -> None:
    path = tmp_path / "buffers.yaml"
    path.write_text(yaml.safe_dump_all([cb(podTemplateRef={"name": "t"}),
                                        {**cb(replicas=1), "kind": "CapacityBuffers"}]))
    assert run(["validate", "-f", str(path)]) == 1
    out = capsys.readouterr().out
    assert PODTEMPLATE_NEEDS_COUNT_MESSAGE in out and "did you mean 'CapacityBuffer'?" in out
    good = tmp_path / "good.yaml"
    good.write_text(yaml.safe_dump(cb(podTemplateRef={"name": "t"}, limits={"cpu": "4"})))
    assert run(["validate", "-f", str(good)]) == 0
