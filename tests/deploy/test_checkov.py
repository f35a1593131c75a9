"""checkov (a static security scanner) over what we ship: the kustomize base as rendered, and deploy/Dockerfile.

checkov lives in its own virtual environment, .venv-tools/ (scripts/setup.sh), because its tightly pinned
dependencies clash with ours. A finding that is wrong for nodeflow is suppressed on the resource itself, with
its reason: `checkov.io/skipN: CKV_...=<reason>` annotations in deploy/*.yaml, `# checkov:skip=CKV_...:<reason>`
in deploy/Dockerfile. checkov runs offline: no guideline download, no update check, no upload.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy.test_manifests import one, render

ROOT = Path(__file__).resolve().parents[2]
CHECKOV = ROOT / ".venv-tools" / "bin" / "checkov"
_pin = re.search(r"^CHECKOV_VERSION=(\S+)$", (ROOT / "scripts" / "setup.sh").read_text(), re.M)
assert _pin is not None, "scripts/setup.sh must pin CHECKOV_VERSION"
PINNED = _pin.group(1)
FRAMEWORKS = ("kubernetes", "dockerfile")
# No guideline download (BC_SKIP_MAPPING), no PyPI update check; with no API key nothing is uploaded either.
OFFLINE_ENV = {"BC_SKIP_MAPPING": "TRUE", "CKV_SKIP_PACKAGE_UPDATE_CHECK": "TRUE", "LOG_LEVEL": "WARNING"}


def scan(directory: Path) -> dict[str, dict[str, Any]]:
    """checkov's JSON report per framework for every manifest and Dockerfile in directory."""
    if not CHECKOV.is_file():
        pytest.fail(f"checkov is not installed at {CHECKOV.relative_to(ROOT)}: run ./scripts/setup.sh, which installs "
                    f"checkov=={PINNED} into .venv-tools/ (its own virtual environment)")
    # No --quiet: it would drop the suppressed checks, and their reasons, from the JSON report.
    proc = subprocess.run([str(CHECKOV), "--directory", str(directory), "--framework", *FRAMEWORKS,
                           "--output", "json", "--skip-download", "--skip-results-upload"],
                          capture_output=True, text=True, timeout=240, env={**os.environ, **OFFLINE_ENV})
    # 0: nothing failed, 1: something failed; anything else is checkov itself failing.
    assert proc.returncode in (0, 1), f"checkov exited {proc.returncode}:\n{proc.stderr[-3000:]}"
    try:
        parsed = json.loads(proc.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"checkov printed no JSON report:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    reports = {r["check_type"]: r for r in (parsed if isinstance(parsed, list) else [parsed]) if "check_type" in r}
    for framework in FRAMEWORKS:  # an empty scan must not pass as a clean one
        assert framework in reports, f"checkov scanned no {framework} files in {directory}: {proc.stdout[-2000:]}"
        summary = reports[framework]["summary"]
        assert summary["resource_count"] > 0 and summary["parsing_errors"] == 0, (framework, summary)
        ran = summary["checkov_version"]
        assert ran == PINNED, f"checkov {ran} ran but scripts/setup.sh pins {PINNED}: run ./scripts/setup.sh"
    return reports


def failed(reports: dict[str, dict[str, Any]]) -> list[str]:
    return sorted(f"{c['check_id']} {c['resource']} ({c['file_path']}): {c['check_name']}"
                  for r in reports.values() for c in r["results"]["failed_checks"])


def of_tree(reports: dict[str, dict[str, Any]], tree: str) -> dict[str, dict[str, Any]]:
    """The checks of one top-level directory of a scan (checkov's file paths start with /<tree>/); each framework
    must have checked something there, so an empty tree cannot pass as a clean one."""
    out = {}
    for framework, report in reports.items():
        results = {kind: [c for c in checks if c["file_path"].lstrip("/").split("/", 1)[0] == tree]
                   for kind, checks in report["results"].items()
                   if kind in ("passed_checks", "failed_checks", "skipped_checks")}
        assert any(results.values()), f"checkov checked no {framework} file in {tree}/"
        out[framework] = {**report, "results": results}
    return out


@pytest.fixture(scope="module")
def scanned(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, dict[str, Any]]]:
    """One checkov run over two trees, each in its own directory: `shipped` (the kustomize base as rendered and
    deploy/Dockerfile) and `bad` (a root privileged pod and a root image). checkov's start-up is most of a scan
    (~10 s of ~12 s), so the module pays it once instead of once per tree."""
    root = tmp_path_factory.mktemp("checkov")
    shipped, bad = root / "shipped", root / "bad"
    shipped.mkdir()
    bad.mkdir()
    (shipped / "deploy.yaml").write_text(yaml.safe_dump_all(render(), sort_keys=False))
    shutil.copy(ROOT / "deploy" / "Dockerfile", shipped / "Dockerfile")
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bad", "namespace": "default"},
           "spec": {"containers": [{"name": "bad", "image": "nginx",
                                    "securityContext": {"privileged": True, "runAsUser": 0}}]}}
    (bad / "bad.yaml").write_text(yaml.safe_dump(pod))
    (bad / "Dockerfile").write_text('FROM python:latest\nUSER root\nCMD ["python"]\n')
    reports = scan(root)
    return {tree: of_tree(reports, tree) for tree in ("shipped", "bad")}


def test_shipped_manifests_and_dockerfile_pass_checkov(scanned: dict[str, dict[str, dict[str, Any]]]) -> None:
    reports = scanned["shipped"]
    findings = failed(reports)
    assert not findings, ("checkov findings in deploy/ (fix them, or suppress one that is wrong for nodeflow on its "
                          "resource with the reason: a `checkov.io/skipN: CKV_...=<reason>` annotation, or "
                          "`# checkov:skip=CKV_...:<reason>` in the Dockerfile):\n  " + "\n  ".join(findings))
    unexplained = [f"{c['check_id']} {c['resource']}" for r in reports.values() for c in r["results"]["skipped_checks"]
                   if c["check_result"].get("suppress_comment", "") in ("", "No comment provided")]
    assert not unexplained, f"suppressed without a reason: {unexplained}"
    assert all(r["results"]["passed_checks"] for r in reports.values())


def test_checkov_reports_a_root_privileged_pod_and_a_root_image(scanned: dict[str, dict[str, dict[str, Any]]]) -> None:
    """The scan can fail, so the test above passing is evidence rather than a scan that saw nothing."""
    ids = {c.split()[0] for c in failed(scanned["bad"])}
    # privileged container, root container; latest base image, last USER is root
    assert {"CKV_K8S_16", "CKV_K8S_23", "CKV_DOCKER_7", "CKV_DOCKER_8"} <= ids, ids


def test_networkpolicy_component_selects_the_base_pods(tmp_path: Path) -> None:
    """The CKV2_K8S_6 suppressions point to deploy/components/networkpolicy: it renders on the base and its
    policies select the worker's and the Job's pods."""
    rel = Path(os.path.relpath(ROOT / "deploy", tmp_path))
    (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump(
        {"resources": [str(rel)], "components": [str(rel / "components" / "networkpolicy")]}))
    docs = render(str(tmp_path))
    for policy, owner_kind, owner in (("nodeflow-worker", "Deployment", "nodeflow-worker"),
                                      ("nodeflow-search-attributes", "Job", "nodeflow-search-attributes")):
        selector = one(docs, "NetworkPolicy", policy)["spec"]["podSelector"]["matchLabels"]
        labels = one(docs, owner_kind, owner)["spec"]["template"]["metadata"]["labels"]
        assert selector.items() <= labels.items(), (policy, selector, labels)
