"""Malformed snapshot files through `nodeflow budgets` and `nodeflow plan`.

Every bad file ends in exit code != 0 and one `error: FILE: document N (kind/name): problem` line, never a
traceback; a mutated snapshot that is still acceptable plans normally (exit 0, JSON out).
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import tempfile
from pathlib import Path

import pytest
import yaml
from fuzz.strategies import fuzz_settings, junk, mutated
from hypothesis import given
from hypothesis import strategies as st

from bench.clusters import node_objects, node_pool, pod
from starter.cli import run

AT = "2026-11-23T12:00:00Z"
FUZZ = fuzz_settings(30)


def _base() -> list[dict]:
    objs = [node_pool("default", budgets=[{"nodes": "50%"}])]
    objs += node_objects("busy", "m5.xlarge") + node_objects("idle", "m5.xlarge", zone="us-east-1b")
    objs += [pod(f"web-{i}", "busy", 0.5, 1.0, labels={"app": "web"}) for i in range(3)]
    objs.append({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                 "metadata": {"name": "web", "namespace": "default"},
                 "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "web"}}}})
    return objs


BASE = _base()


def _cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run(argv)
    return code, out.getvalue(), err.getvalue()


def _both(text: str | bytes) -> list[tuple[str, int, str, str]]:
    """(command, exit code, stdout, stderr) of `budgets` and `plan` on a file holding `text`."""
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "snap.yaml"
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text, encoding="utf-8")
        for cmd in ("budgets", "plan"):
            code, out, err = _cli([cmd, "-f", str(path), "--at", AT, "-o", "json"])
            results.append((cmd, code, out, err.replace(str(path), "FILE")))
    return results


def _assert_clean(results: list[tuple[str, int, str, str]], must_fail: bool = False) -> None:
    for cmd, code, out, err in results:
        assert "Traceback" not in out + err, (cmd, err)
        if code == 0:
            assert not must_fail, (cmd, out)
            json.loads(out)
        else:
            assert code in (1, 2), (cmd, code, err)
            assert err.startswith("error: "), (cmd, err)


def test_base_snapshot_plans() -> None:
    results = _both(yaml.safe_dump_all(BASE))
    assert [r[1] for r in results] == [0, 0], results


@FUZZ
@given(index=st.integers(0, len(BASE) - 1), data=st.data())
def test_mutated_document(index: int, data: st.DataObject) -> None:
    docs = list(BASE)
    docs[index] = data.draw(st.one_of(mutated(BASE[index], max_mutations=2), junk))
    _assert_clean(_both(yaml.safe_dump_all(docs)))


@FUZZ
@given(cut=st.integers(1, 4000))
def test_truncated_yaml(cut: int) -> None:
    text = yaml.safe_dump_all(BASE)
    _assert_clean(_both(text[: cut % len(text)]))


@FUZZ
@given(junk_bytes=st.binary(min_size=1, max_size=300))
def test_binary_junk(junk_bytes: bytes) -> None:
    _assert_clean(_both(junk_bytes), must_fail=True)
    with tempfile.TemporaryDirectory() as tmp:  # `nodeflow validate` reports per file and keeps going
        path = Path(tmp) / "junk.yaml"
        path.write_bytes(junk_bytes)
        code, out, err = _cli(["validate", "-f", str(path)])
    assert code == 1 and "Traceback" not in out + err, (code, out, err)
    assert out.startswith(f"{path}") or err.startswith("error: "), (out, err)


CASES = {
    "non-dict document": ("- a\n- b\n", "document 1: expected a Kubernetes object (a mapping), got list"),
    "scalar document": ("just words\n", "document 1: expected a Kubernetes object (a mapping), got str"),
    "missing kind": ("apiVersion: v1\nmetadata: {name: x}\n", "document 1 (?/x): missing 'kind'"),
    "missing name": ("apiVersion: v1\nkind: Node\nmetadata: {}\n", "document 1 (Node/?): missing 'metadata.name'"),
    "wrong NodePool version": ("apiVersion: karpenter.sh/v1beta1\nkind: NodePool\nmetadata: {name: p}\nspec: {}\n",
                               "document 1 (NodePool/p): apiVersion 'karpenter.sh/v1beta1' is not supported"),
    "items not a list": ("apiVersion: v1\nkind: List\nitems: 5\n", "document 1 (List/?): 'items' must be a list"),
    "bad YAML": ("apiVersion: v1\nkind: [Node\n", "document 1: invalid YAML at line"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_malformed_file_names_the_document(case: str) -> None:
    text, expected = CASES[case]
    for cmd, code, _, err in _both(text):
        assert code == 1, (cmd, err)
        assert err.startswith(f"error: FILE: {expected}"), (cmd, err)


def test_second_document_is_named() -> None:
    text = yaml.safe_dump_all(BASE) + "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns}\n" \
        "spec: {containers: 7}\n---\n[1]\n"
    for cmd, code, _, err in _both(text):
        assert code == 1 and "Traceback" not in err, (cmd, err)
        assert err.startswith(f"error: FILE: document {len(BASE) + 1} (Pod/ns/p): "), (cmd, err)


@pytest.mark.parametrize("value", ["1" + "0" * 400, "1e400", "-5", "9" * 40 + "Ei", "NaN", "banana"])
def test_huge_and_wrong_numbers_in_nodes_and_pods(value: str) -> None:
    rng = random.Random(7)
    for kind, path in (("Node", ("status", "allocatable", "cpu")), ("Node", ("status", "allocatable", "memory")),
                       ("Pod", ("spec", "containers", 0, "resources", "requests", "cpu"))):
        docs = yaml.safe_load_all(yaml.safe_dump_all(BASE))
        docs = list(docs)
        target = rng.choice([d for d in docs if d["kind"] == kind])
        node = target
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
        results = _both(yaml.safe_dump_all(docs))
        _assert_clean(results)
        for cmd, code, _, err in results:
            if code:
                assert "document" in err and f"({kind}/" in err, (cmd, err)
