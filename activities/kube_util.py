"""Small helpers over the `kubernetes` client shared by the planner/disruption activities.

The client is blocking, so activities call these through `asyncio.to_thread`.
"""

from __future__ import annotations

from typing import Any

from api import labels

KARPENTER_GROUP = labels.GROUP
KARPENTER_VERSION = "v1"


def api_status(exc: BaseException) -> int | None:
    """HTTP status of a kubernetes ApiException (or its subclasses, e.g. NotFoundException), None otherwise."""
    is_api = any(cls.__name__ == "ApiException" for cls in type(exc).__mro__)
    return getattr(exc, "status", None) if is_api else None


def node_ready(node: dict[str, Any]) -> bool:
    for cond in (node.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return cond.get("status") == "True"
    return False


def to_dict(api_client: Any, obj: Any) -> dict[str, Any]:
    """A typed client model as the plain camelCase dict `kubectl get -o json` would print."""
    if isinstance(obj, dict):
        return obj
    return api_client.sanitize_for_serialization(obj)
