"""Reads the API server's /version so the worker and `nodeflow validate` refuse a too-old cluster in one line
(api/kube_version.py says which versions and why) instead of a CRD compile error later."""

from __future__ import annotations

import logging
from typing import Any

from api.kube_version import too_old
from runtime.cloud_clients import kube_api_client

log = logging.getLogger(__name__)
VERSION_TIMEOUT_SECONDS = 10.0


def version_problem(api: Any) -> str | None:
    """The one-line refusal for the cluster behind `api` (a kubernetes ApiClient), None when it is new enough."""
    from kubernetes import client as k8s

    info = k8s.VersionApi(api).get_code(_request_timeout=VERSION_TIMEOUT_SECONDS)
    return too_old(api.sanitize_for_serialization(info), f"the API server at {api.configuration.host}")


def kubeconfig_version_problem(kubeconfig: str | None) -> str | None:
    """`version_problem` for the cluster of a kubeconfig (in-cluster config without one). Raises what the client
    raises when the API server cannot be reached: the caller decides whether that stops it."""
    api = kube_api_client(kubeconfig, pool_size=1)
    try:
        return version_problem(api)
    finally:
        api.close()
