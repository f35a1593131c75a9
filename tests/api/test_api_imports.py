"""House rule: api/ imports nothing of Temporal, kubernetes or boto3 (checked in a fresh interpreter)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_api_modules_do_not_pull_in_temporal_kubernetes_or_boto3() -> None:
    modules = sorted(p.stem for p in (ROOT / "api").glob("*.py") if p.stem != "__init__")
    code = (
        "import importlib, sys\n"
        f"for m in {modules!r}: importlib.import_module('api.' + m)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('temporalio', 'kubernetes', 'boto3', 'botocore'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"api/ imported {out.stdout.strip()}"
    assert {"budgets", "cron", "duration", "nodeclaim", "nodepool", "snapshot", "validation"} <= set(modules)
