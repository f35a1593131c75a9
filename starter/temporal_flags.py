"""Command-line flags for reaching Temporal (and the cluster), kept free of heavy imports for fast `--help`."""

from __future__ import annotations

from typing import Any


def add_temporal_flags(parser: Any) -> None:
    parser.add_argument("--address", default=None, help="Temporal host:port (env NODEFLOW_TEMPORAL_ADDRESS)")
    parser.add_argument("--namespace", default=None, help="Temporal namespace (env NODEFLOW_TEMPORAL_NAMESPACE)")
    parser.add_argument("--api-key", default=None, help="Temporal Cloud API key (env NODEFLOW_TEMPORAL_API_KEY)")
    parser.add_argument("--kubeconfig", default=None,
                        help="map the node name to its uid through the cluster (default: $KUBECONFIG, then "
                             "~/.kube/config; without one, or without the node, Temporal is searched by name)")
    parser.add_argument("--context", default=None, help="kubeconfig context")
