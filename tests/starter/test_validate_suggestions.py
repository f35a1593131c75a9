"""`nodeflow validate` names the closest field, enum value or kind when one is misspelt."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from api.suggest import closest, did_you_mean
from starter.cli import run

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _pool() -> dict:
    return next(d for d in yaml.safe_load_all((EXAMPLES / "plan-drift.yaml").read_text())
                if d and d.get("kind") == "NodePool")


@pytest.mark.parametrize(("word", "choices", "expected"), [
    ("WhenEmptyOrUnderutilised", ("WhenEmpty", "WhenEmptyOrUnderutilized"), "WhenEmptyOrUnderutilized"),
    ("consolidateAftr", ("consolidationPolicy", "consolidateAfter", "budgets"), "consolidateAfter"),
    ("noschedule", ("NoSchedule", "PreferNoSchedule", "NoExecute"), "NoSchedule"),
    ("Like", ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"), None),
    ("", ("a",), None), (5, ("5",), None)])
def test_closest(word: object, choices: tuple[str, ...], expected: str | None) -> None:
    assert closest(word, choices) == expected
    assert did_you_mean(word, choices) == (f"; did you mean {expected!r}?" if expected else "")


def test_misspelt_field_enum_and_kind(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pool = _pool()
    pool["spec"]["disruption"] = {"consolidationPolicy": "WhenEmptyOrUnderutilised", "consolidateAftr": "30s",
                                  "budgets": [{"nodes": "1", "reasons": ["Drift"]}]}
    pool["spec"]["template"]["spec"]["taints"] = [{"key": "a", "effect": "NoSchedul"}]
    typo_kind = {"apiVersion": "karpenter.sh/v1", "kind": "NodePools", "metadata": {"name": "x"}}
    other = {"apiVersion": "example.com/v1", "kind": "Widgets", "metadata": {"name": "w"}}  # not ours: no opinion
    path = tmp_path / "typos.yaml"
    path.write_text(yaml.safe_dump_all([pool, typo_kind, other]))
    assert run(["validate", "-f", str(path)]) == 1
    out = capsys.readouterr().out
    assert "spec.disruption.consolidationPolicy: 'WhenEmptyOrUnderutilised' is not one of WhenEmpty, " \
           "WhenEmptyOrUnderutilized, Balanced; did you mean 'WhenEmptyOrUnderutilized'?" in out
    assert "spec.disruption.consolidateAftr: unknown field; did you mean 'consolidateAfter'?" in out
    assert "'reasons' value 'Drift' is not one of Empty, Drifted, Underutilized, Unhealthy; did you mean 'Drifted'?" \
        in out
    assert "taints[0].effect: 'NoSchedul' is not one of NoSchedule, PreferNoSchedule, NoExecute; " \
           "did you mean 'NoSchedule'?" in out
    assert "(NodePools/x): kind: 'NodePools' is not a kind of karpenter.sh (NodePool, NodeClaim, NodeOverlay); " \
           "did you mean 'NodePool'?" in out
    assert "Widgets" not in out
