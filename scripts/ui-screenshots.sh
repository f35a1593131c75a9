#!/usr/bin/env bash
# Re-take docs/operations.md's Temporal UI screenshots (docs/images/ui-*.png) against the demo. Not part of the test run.
#
# Needs Debian's Chromium (apt-get install -y chromium) and kubectl. Starts `nodeflow demo` in the background,
# deletes node general-01 (its do-not-disrupt pod keeps the TerminationWorkflow in phase Draining), waits for
# the drain, takes the pictures with scripts/ui_screenshots.py (headless Chromium over DevTools), stops the demo.
set -euo pipefail

cd "$(dirname "$0")/.."
OUT=${1:-docs/images}
WORKDIR=$(mktemp -d /tmp/nodeflow-ui-shots.XXXXXX)
NODE=general-01

[ -x .venv/bin/nodeflow ] || ./scripts/setup.sh
command -v chromium >/dev/null || { echo "chromium not found: apt-get install -y chromium" >&2; exit 1; }

setsid .venv/bin/nodeflow demo --duration 600 --workdir "$WORKDIR" >"$WORKDIR/demo.out" 2>&1 &
DEMO=$!
stop_demo() { kill -INT -- "-$DEMO" 2>/dev/null || true; sleep 5; kill -TERM -- "-$DEMO" 2>/dev/null || true; }
trap stop_demo EXIT

for _ in $(seq 120); do
  grep -q "Temporal UI:" "$WORKDIR/demo.out" && break
  kill -0 "$DEMO" 2>/dev/null || { cat "$WORKDIR/demo.out" >&2; exit 1; }
  sleep 1
done
UI=$(grep -o 'http://127.0.0.1:[0-9]*' "$WORKDIR/demo.out" | head -1)
TEMPORAL=$(grep -o 'NODEFLOW_TEMPORAL_ADDRESS=[0-9.:]*' "$WORKDIR/demo.out" | head -1 | cut -d= -f2)
echo "demo up: UI $UI, Temporal $TEMPORAL"

sleep 20  # let the first passes start their disruptions, so the list has company
KUBECONFIG="$WORKDIR/kubeconfig" kubectl delete node "$NODE" --wait=false
PYTHONPATH="$PWD" .venv/bin/python scripts/ui_screenshots.py --ui "$UI" --temporal "$TEMPORAL" --node "$NODE" --out "$OUT"
