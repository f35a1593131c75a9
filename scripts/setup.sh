#!/usr/bin/env bash
# Creates .venv and installs nodeflow with everything the demo and the tests need (idempotent: a second run
# only checks), the [sim] extra included: the simulated world (simulator/, devstack/) the demo and tests run in.
# The installer is uv (PyPI's `uv`, put into .venv by pip): it installs the ~110 packages in about 30 s with their
# bytecode compiled, where pip took about 100 s (docs/benchmarks.md, Test suite); pip stays the fallback where uv
# cannot be installed. The installer's own output goes to .venv/setup.log and is shown only when something fails.
# --without-test-tools (`make setup`, `make demo`): skip the tools only tests use, checkov's own environment
# (.venv-tools, about 290 MB) and promtool; `make test` (and so CI's .ci/run) runs it without the flag.
set -euo pipefail
cd "$(dirname "$0")/.."
test_tools=1
for arg in "$@"; do
  case $arg in
    --without-test-tools) test_tools=0 ;;
    *) echo "usage: $0 [--without-test-tools]" >&2; exit 2 ;;
  esac
done
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
# install_quiet VENV ARGS...: install into VENV with uv, else pip; the output goes to VENV/setup.log, shown only
# on failure. Bytecode is compiled at install time as pip does: where PYTHONDONTWRITEBYTECODE is set, a package
# installed without it is compiled again by every process that imports it.
install_quiet() {
  local venv=$1 venv_log=$1/setup.log
  shift
  local cmd=("$venv/bin/python" -m pip install --quiet "$@")
  if [ -x .venv/bin/uv ]; then
    local cert=${SSL_CERT_FILE:-${PIP_CERT:-}}  # the bundle uv is to trust, if any (see below); none: unset
    if [ -n "$cert" ]; then cmd=(env SSL_CERT_FILE="$cert"); else cmd=(env -u SSL_CERT_FILE); fi
    cmd+=(UV_NATIVE_TLS="${UV_NATIVE_TLS:-1}" .venv/bin/uv pip install --quiet --compile-bytecode
          --python "$venv/bin/python" "$@")
  fi
  if ! "${cmd[@]}" >>"$venv_log" 2>&1; then
    echo "error: ${cmd[*]} failed; the last lines of $venv_log:" >&2
    tail -n 25 "$venv_log" >&2
    exit 1
  fi
}
# uv into .venv, once, with the pip every venv has; uv trusts what pip does here (the system's store, or the bundle
# PIP_CERT names for an intercepting proxy). Without uv (no wheel for this platform, say) the installs use pip.
if [ ! -x .venv/bin/uv ] && ! .venv/bin/python -m pip install --quiet uv >>.venv/setup.log 2>&1; then
  echo "note: uv could not be installed into .venv (see .venv/setup.log); installing with pip, which is slower" >&2
fi
# checkov (tests/deploy/test_checkov.py scans deploy/ with it) pins its many dependencies (boto3, pydantic, ...)
# tightly, so it gets its own virtual environment rather than sharing .venv with nodeflow's.
CHECKOV_VERSION=3.3.30
tools_stamp=.venv-tools/.checkov-$CHECKOV_VERSION
tools_pid=
if [ "$test_tools" = 1 ] && [ ! -f "$tools_stamp" ]; then
  echo "setting up .venv-tools (checkov $CHECKOV_VERSION, once, beside .venv's) ..."
  if [ -x .venv/bin/uv ] && [ ! -x .venv-tools/bin/python ]; then
    .venv/bin/uv venv --quiet --python "$PY" .venv-tools  # no pip to seed: 0.03 s against python -m venv's 6 s
  elif [ ! -x .venv-tools/bin/python ]; then
    "$PY" -m venv .venv-tools
  fi
  : >.venv-tools/setup.log
  (  # in the background: the two installs overlap (one downloads or unpacks while the other resolves)
    install_quiet .venv-tools "checkov==$CHECKOV_VERSION"
    rm -f .venv-tools/.checkov-*
    touch "$tools_stamp"
  ) &
  tools_pid=$!
  trap 'kill "$tools_pid" 2>/dev/null || true' EXIT  # .venv's install failed: do not leave it running
fi
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  echo "setting up .venv (Temporal dev server, moto, Python dependencies; the first run takes about a minute) ..."
  : >"$log"
  install_quiet .venv -e '.[dev,solver,sim]'  # sim: the simulated world the demo and the tests run in
  touch "$stamp"
fi
# The checkout's bytecode, written once here: where PYTHONDONTWRITEBYTECODE is set (it was on the machines
# measured) no import writes it, so every worker, CLI and simulator process compiled the modules it imports again
# (about 1 s of CPU each on a 2-core machine, over a hundred processes in `make test`). A second run only compares
# timestamps.
# The top-level folders and modules by name: given `.`, compileall's workers also walked every file of the two venvs
# to skip them (9 s for nothing to compile here, 3 s this way).
.venv/bin/python -m compileall -q -j 0 -- */ ./*.py >/dev/null
# The same for pytest's assert-rewritten bytecode of the test modules: each of `make test`'s four workers rewrote
# all ~400 again (about 11 CPU-s each here); scripts/rewrite_test_asserts.py writes what pytest would.
if [ "$test_tools" = 1 ]; then
  .venv/bin/python scripts/rewrite_test_asserts.py
fi
if [ -n "$tools_pid" ]; then
  wait "$tools_pid" || exit 1  # install_quiet said what failed
  trap - EXIT
fi
if [ "$test_tools" = 0 ]; then
  exit 0
fi
# Debian's tools the tests use as real parts, installed as root or with passwordless sudo:
# - promtool (tests/deploy/test_alert_rules.py unit-tests deploy/monitoring's alerts) from `prometheus`; on a systemd
#   machine the package also starts a Prometheus service on :9090, which nothing here uses;
# - chromium (tests/devstack/test_ui_list.py reads the Temporal UI's workflow list headless) from `chromium`.
# apt_tool COMMAND PACKAGE TEST: install PACKAGE when COMMAND is missing, else say which test needs it.
apt_tool() {
  local cmd=$1 pkg=$2 test=$3
  command -v "$cmd" >/dev/null 2>&1 && return 0
  local as_root=()
  if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then as_root=(sudo -n); fi
  if command -v apt-get >/dev/null 2>&1 && { [ "$(id -u)" = 0 ] || [ ${#as_root[@]} -gt 0 ]; }; then
    echo "installing $cmd (Debian's $pkg package) ..."
    apt_install() { "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$pkg" >>"$log" 2>&1; }
    apt_install || { "${as_root[@]}" apt-get update -q >>"$log" 2>&1 && apt_install; } ||
      echo "note: installing Debian's $pkg package failed (see $log); $test needs $cmd" >&2
  else
    echo "note: $cmd is missing: install Debian's $pkg package (apt-get install $pkg) as root; $test needs it" >&2
  fi
}
apt_tool promtool prometheus tests/deploy/test_alert_rules.py
apt_tool chromium chromium tests/devstack/test_ui_list.py
