"""`nodeflow plan --kubeconfig`: read a live cluster into the same snapshot the planner workflow plans on.

Nodes already tainted `karpenter.sh/disrupted` are excluded, as in a real planner pass (in-flight
workflows are not consulted: the dry run needs no Temporal). Paused NodePools are blocked by planning.
"""

from __future__ import annotations

from typing import Any

from starter.kubeconfig import api_client
from starter.output import CliError

# Our modules that load pydantic, temporalio or kubernetes are imported inside the functions that use them:
# this module loads with `nodeflow --help` (starter/cli.py builds every command's parser), which takes 0.13 s
# without them and 0.83 s with them (farm-bench, median).


def load_live_snapshot(kubeconfig: str | None, context: str | None = None) -> tuple[Any, set[str]]:
    """(Snapshot, excluded node names) from the cluster the kubeconfig points at."""
    from activities.planning_runner import tainted_nodes
    from api.snapshot import Snapshot, SnapshotError
    from gateways.kube import KubeClient

    api = api_client(kubeconfig, context)
    try:
        objs = KubeClient(api).cluster_objects()
    except Exception as exc:
        why = " ".join(str(p) for p in (getattr(exc, "status", None), getattr(exc, "reason", None) or exc) if p)
        raise CliError(f"cannot read the cluster at {api.configuration.host} ({kubeconfig}): {why}") from exc
    finally:
        api.close()
    excluded = tainted_nodes(objs)
    try:
        return Snapshot.from_objects(objs, source=f"cluster {api.configuration.host}"), excluded
    except SnapshotError as exc:
        raise CliError(str(exc)) from exc


def load_catalog_arg(path: str | None) -> Any:
    """The --catalog override for live mode (None: the planner's default catalog)."""
    if not path:
        return None
    from api.catalog import load_catalog

    try:
        return load_catalog(path)
    except FileNotFoundError as exc:
        raise CliError(f"catalog file {path!r} not found") from exc
    except Exception as exc:
        raise CliError(f"catalog {path}: {exc}") from exc
