"""api/model_problems.py: how `nodeflow validate` words a pydantic error, for every document kind alike."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from api.capacity_buffer import validate_capacity_buffer
from api.model_problems import field_path, model_problems


class _Item(BaseModel):
    model_config = ConfigDict(extra="forbid")
    nodes: str

    @field_validator("nodes")
    @classmethod
    def _nodes(cls, v: str) -> str:
        if not v.endswith("%"):
            raise ValueError(f"{v!r} is not a percentage")
        return v


class _Doc(BaseModel):
    items: list[_Item]


def _errors(obj: object) -> ValidationError:
    with pytest.raises(ValidationError) as err:
        _Doc.model_validate(obj)
    return err.value


def test_paths_read_as_kubectl_writes_them() -> None:
    assert field_path(("spec", "budgets", 1, "nodes")) == "spec.budgets[1].nodes"
    assert field_path(()) == "(document)" and field_path((), empty="spec") == "spec"


def test_each_error_is_one_line_in_the_rules_words() -> None:
    exc = _errors({"items": [{"nodes": "5"}, {"typo": 1}]})
    assert model_problems(exc) == ["items[0].nodes: '5' is not a percentage",  # no "Value error, " prefix
                                   "items[1].nodes: required field is missing",
                                   "items[1].typo: unknown field"]


def test_a_capacity_buffer_reads_like_the_other_kinds() -> None:
    doc = {"apiVersion": "autoscaling.x-k8s.io/v1beta1", "kind": "CapacityBuffer", "metadata": {"name": "b"},
           "spec": {"replicas": 1, "podTemplateRef": {"name": "t"}, "surprise": True}}
    assert "spec.surprise: unknown field" in validate_capacity_buffer(doc)
