#!/bin/sh
# Registers nodeflow's Temporal search attributes (Keyword). Idempotent: safe to run on every deploy.
# Connection: NODEFLOW_TEMPORAL_ADDRESS (default localhost:7233), NODEFLOW_TEMPORAL_NAMESPACE (default
# "default"); extra arguments go to every `temporal` call (e.g. --tls, --api-key, --tls-cert-path).
# One `create` per name: the CLI takes a single --type, and with several --name flags it registers only the
# first (temporal CLI 1.5), so each attribute gets its own call.
set -eu
TEMPORAL=${TEMPORAL:-temporal}
ADDRESS=${NODEFLOW_TEMPORAL_ADDRESS:-localhost:7233}
NAMESPACE=${NODEFLOW_TEMPORAL_NAMESPACE:-default}
for name in NodeflowNode NodeflowNodePool NodeflowReason NodeflowPhase; do
  "$TEMPORAL" operator search-attribute create --address "$ADDRESS" --namespace "$NAMESPACE" \
    --name "$name" --type Keyword "$@"
done
"$TEMPORAL" operator search-attribute list --address "$ADDRESS" --namespace "$NAMESPACE" "$@" | grep Nodeflow
