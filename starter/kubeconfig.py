"""Where every command finds the cluster, as kubectl does: `--kubeconfig`, else `$KUBECONFIG` (a list separated
by `:`, merged by the kubernetes client's loader), else `~/.kube/config` when it exists.

`$KUBECONFIG` is read when a command runs (the kubernetes package reads it once, at import).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from starter.output import CliError

DEFAULT_FILE = Path("~/.kube/config")


def resolve(flag: str | None) -> str | None:
    """The kubeconfig (one path, or a `:`-separated list) a command uses; None when none is configured."""
    if flag:
        return flag
    env = os.environ.get("KUBECONFIG", "").strip(os.pathsep + " ")
    if env:
        return env
    default = DEFAULT_FILE.expanduser()
    return str(default) if default.is_file() else None


def origin(flag: str | None) -> str:
    """Which setting chose the kubeconfig, for the live view's header and error messages."""
    if flag:
        return "--kubeconfig"
    if os.environ.get("KUBECONFIG", "").strip(os.pathsep + " "):
        return "$KUBECONFIG"
    return str(DEFAULT_FILE)


def api_client(kubeconfig: str | None, context: str | None = None) -> Any:
    """A kubernetes ApiClient for the resolved kubeconfig, or an actionable CliError."""
    from kubernetes import config as k8s_config

    if not kubeconfig:
        raise CliError("no kubeconfig: pass --kubeconfig FILE or set KUBECONFIG (as for kubectl)")
    try:
        return k8s_config.new_client_from_config(config_file=kubeconfig, context=context)
    except Exception as exc:
        raise CliError(f"cannot load kubeconfig {kubeconfig}: {exc}") from exc


def server_of(kubeconfig: str | None, context: str | None = None) -> str | None:
    """The API server the kubeconfig's (current) context points at; None when it cannot be loaded."""
    try:
        api = api_client(kubeconfig, context)
    except CliError:
        return None
    try:
        return str(api.configuration.host)
    finally:
        api.close()
