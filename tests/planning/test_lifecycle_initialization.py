"""planning/lifecycle/initialization.py against docs/karpenter-reference.md §5: the checks run
in Karpenter's order and the first failing one names the reason."""

from __future__ import annotations

from typing import Any

import pytest

from planning.lifecycle.initialization import NotInitialized, check, node_ready

READY = {"type": "Ready", "status": "True"}


def claim(*, startup: list[dict] | None = None, requests: dict[str, str] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": "default-abc", "uid": "uid-1"},
            "spec": {"startupTaints": startup or [], "resources": {"requests": requests or {}}}}


def node(*, ready: bool = True, taints: list[dict] | None = None,
         allocatable: dict[str, str] | None = None) -> dict[str, Any]:
    conds = [READY if ready else {"type": "Ready", "status": "False"},
             {"type": "MemoryPressure", "status": "False"}]
    return {"metadata": {"name": "ip-10-0-0-1"}, "spec": {"taints": taints or []},
            "status": {"conditions": conds,
                       "allocatable": allocatable or {"cpu": "1930m", "memory": "7291Mi", "pods": "29"}}}


def test_ready_node_without_taints_is_initialized() -> None:
    v = check(claim(requests={"cpu": "1", "memory": "1Gi", "pods": "3"}), node())
    assert v.reason is None


def test_missing_node_is_node_not_found() -> None:
    assert check(claim(), None).reason is NotInitialized.NODE_NOT_FOUND


@pytest.mark.parametrize("conds", [[{"type": "Ready", "status": "False"}], [{"type": "Ready", "status": "Unknown"}],
                                   []])
def test_node_not_ready(conds: list[dict]) -> None:
    n = node()
    n["status"]["conditions"] = conds
    assert not node_ready(n)
    assert check(claim(), n).reason is NotInitialized.NODE_NOT_READY


def test_not_ready_comes_before_taints() -> None:
    n = node(ready=False, taints=[{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}])
    assert check(claim(), n).reason is NotInitialized.NODE_NOT_READY


def test_startup_taint_still_on_node() -> None:
    startup = [{"key": "example.com/agent", "value": "x", "effect": "NoSchedule"}]
    v = check(claim(startup=startup), node(taints=[{"key": "example.com/agent", "effect": "NoSchedule"}]))
    assert v.reason is NotInitialized.STARTUP_TAINTS_EXIST
    assert "example.com/agent" in v.message


def test_startup_taint_matches_by_key_and_effect() -> None:
    startup = [{"key": "example.com/agent", "effect": "NoSchedule"}]
    v = check(claim(startup=startup), node(taints=[{"key": "example.com/agent", "effect": "NoExecute"}]))
    assert v.reason is None


def test_startup_taint_comes_before_ephemeral_taints() -> None:
    startup = [{"key": "example.com/agent", "effect": "NoSchedule"}]
    n = node(taints=[{"key": "node.cloudprovider.kubernetes.io/uninitialized", "effect": "NoSchedule"},
                     {"key": "example.com/agent", "effect": "NoSchedule"}])
    assert check(claim(startup=startup), n).reason is NotInitialized.STARTUP_TAINTS_EXIST


@pytest.mark.parametrize("key,effect", [
    ("node.kubernetes.io/not-ready", "NoSchedule"),
    ("node.kubernetes.io/not-ready", "NoExecute"),
    ("node.kubernetes.io/unreachable", "NoSchedule"),
    ("node.cloudprovider.kubernetes.io/uninitialized", "NoSchedule"),
    ("karpenter.sh/unregistered", "NoExecute"),
    ("readiness.k8s.io/network", "NoSchedule"),
    ("readiness.k8s.io/storage", "NoExecute"),
])
def test_each_known_ephemeral_taint_blocks(key: str, effect: str) -> None:
    v = check(claim(), node(taints=[{"key": key, "effect": effect}]))
    assert v.reason is NotInitialized.KNOWN_EPHEMERAL_TAINTS_EXIST
    assert key in v.message


@pytest.mark.parametrize("key,effect", [
    ("node.kubernetes.io/unreachable", "NoExecute"),  # only the NoSchedule one is known-ephemeral
    ("karpenter.sh/unregistered", "NoSchedule"),
    ("example.com/readiness.k8s.io/x", "NoSchedule"),  # the prefix must lead the key
    ("dedicated", "NoSchedule"),
])
def test_other_taints_do_not_block(key: str, effect: str) -> None:
    assert check(claim(), node(taints=[{"key": key, "effect": effect}])).reason is None


def test_ephemeral_taint_comes_before_resources() -> None:
    n = node(taints=[{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}])
    assert check(claim(requests={"nvidia.com/gpu": "1"}), n).reason is NotInitialized.KNOWN_EPHEMERAL_TAINTS_EXIST


def test_requested_extended_resource_missing_from_allocatable() -> None:
    v = check(claim(requests={"cpu": "1", "nvidia.com/gpu": "1"}), node())
    assert v.reason is NotInitialized.RESOURCE_NOT_REGISTERED
    assert "nvidia.com/gpu" in v.message


def test_requested_extended_resource_zero_in_allocatable() -> None:
    n = node(allocatable={"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": "0"})
    assert check(claim(requests={"nvidia.com/gpu": "1"}), n).reason is NotInitialized.RESOURCE_NOT_REGISTERED


def test_requested_extended_resource_present_is_initialized() -> None:
    n = node(allocatable={"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": "1"})
    assert check(claim(requests={"nvidia.com/gpu": "1"}), n).reason is None


def test_zero_request_is_not_waited_for() -> None:
    assert check(claim(requests={"nvidia.com/gpu": "0"}), node()).reason is None


def test_milli_quantities_count_as_non_zero() -> None:
    """A request of 2 cores against allocatable 1930m: both non-zero, so registered (not compared by size)."""
    assert check(claim(requests={"cpu": "2", "memory": "500m"}), node()).reason is None
