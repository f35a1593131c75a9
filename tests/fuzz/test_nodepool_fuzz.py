"""Hypothesis-generated NodePools through the API (model + validation) and the `nodeflow validate` CLI.

Whatever the document, the API answers with problems (field path: rule) or a pydantic ValidationError, and the
CLI exits 0 or 1 with one `FILE: document N (kind/name): path: problem` line per problem, never a traceback.
A document the validator accepts must load as a model and give budget rows (the two never disagree).
"""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import yaml
from fuzz.strategies import fuzz_settings, junk, mutated
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from api.budgets import compute_budget_rows
from api.nodepool import NodePool
from api.validation import validate_nodepool
from starter.cli import run

BASE = {
    "apiVersion": "karpenter.sh/v1", "kind": "NodePool",
    "metadata": {"name": "default", "labels": {"team": "a"}},
    "spec": {
        "template": {
            "metadata": {"labels": {"tier": "web"}},
            "spec": {
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                "requirements": [
                    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand", "spot"]},
                    {"key": "karpenter.k8s.aws/instance-cpu", "operator": "Gt", "values": ["1"]},
                ],
                "taints": [{"key": "dedicated", "value": "web", "effect": "NoSchedule"}],
                "expireAfter": "720h", "terminationGracePeriod": "1h",
            },
        },
        "disruption": {
            "consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "30s",
            "budgets": [{"nodes": "10%"}, {"nodes": "0", "schedule": "@daily", "duration": "10m",
                                            "reasons": ["Underutilized"]}],
        },
        "limits": {"cpu": "1000", "memory": "1000Gi"}, "weight": 10,
    },
}
AT = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
FUZZ = fuzz_settings(80)
nodepools = st.one_of(mutated(BASE), junk)


def test_base_is_valid() -> None:
    assert validate_nodepool(BASE) == []
    assert NodePool.model_validate(BASE).name == "default"


@FUZZ
@given(doc=nodepools)
def test_api_reports_problems_or_loads(doc: object) -> None:
    problems = validate_nodepool(doc)
    assert isinstance(problems, list) and all(isinstance(p, str) and ": " in p for p in problems), problems
    try:
        pool = NodePool.model_validate(doc)
    except ValidationError as exc:
        assert exc.errors(), "a ValidationError names at least one field"
        assert problems, f"the validator accepted what the model rejects: {exc}"
        return
    if not problems:
        rows = compute_budget_rows([pool], [], [], AT)
        assert {r.reason for r in rows} == {"Empty", "Drifted", "Underutilized"}


def _cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run(argv)
    return code, out.getvalue(), err.getvalue()


@FUZZ
@given(doc=nodepools, as_json=st.booleans())
def test_cli_validate_exit_code_and_messages(doc: object, as_json: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / ("pool.json" if as_json else "pool.yaml")
        path.write_text(json.dumps(doc) if as_json else yaml.safe_dump(doc), encoding="utf-8")
        code, out, err = _cli(["validate", "-f", str(path)])
    assert "Traceback" not in out + err
    assert code in (0, 1), (code, out, err)
    if code == 0:
        assert out.strip() == "valid"
        return
    lines = [ln for ln in out.splitlines() if ln.strip()]
    assert lines or err.startswith("error:"), (out, err)
    for line in lines:
        assert line.startswith(f"{path}: document 1") or line.startswith(f"{path}:"), line
    if isinstance(doc, dict) and doc.get("kind") == "NodePool":
        assert (code == 0) == (validate_nodepool(doc) == []), (out, err)
