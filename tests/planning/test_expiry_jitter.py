"""Expiry jitter (docs/semantics.md §15.12): each node's expiry moves earlier by a share of expireAfter fixed by its
NodeClaim's name, stable across passes and processes, spread over the window, never later than without jitter."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from planning_factory import AT, node_and_claim, nodepool, pod, snapshot

from api import labels as L
from planning.planner.plan import plan
from planning.policies.expiry_jitter import jitter_offset, node_share

REQ = [{"key": L.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
       {"key": L.ARCH_LABEL, "operator": "In", "values": ["amd64"]}]
NAMES = [f"default-{i:05d}" for i in range(1000)]


def policy(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "nodeflow.dev/v1alpha1", "kind": "DisruptionPolicy", "metadata": {"name": "p"},
            "spec": {"nodePools": ["default"], **spec}}


def test_the_share_is_fixed_per_name_and_in_zero_one():
    shares = [node_share(n) for n in NAMES]
    assert shares == [node_share(n) for n in NAMES]
    assert all(0 <= s < 1 for s in shares)
    assert node_share("a") != node_share("b")


def test_the_share_does_not_depend_on_the_process_or_its_hash_seed():
    code = "from planning.policies.expiry_jitter import node_share; print(repr(node_share('default-00042')))"
    root = Path(__file__).resolve().parents[2]
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root,
                           env={**os.environ, "PYTHONHASHSEED": seed}).stdout.strip() for seed in ("1", "2", "3")}
    assert outs == {repr(node_share("default-00042"))}


def test_a_fleet_of_1000_spreads_over_the_whole_window():
    window = timedelta(hours=720)
    offsets = [jitter_offset(n, window, Decimal("0.1")) for n in NAMES]
    bound = window * 0.1
    assert all(timedelta(0) <= o < bound for o in offsets)  # never later than without jitter, never past the share
    deciles = [0] * 10
    for o in offsets:
        deciles[int(o / bound * 10)] += 1
    assert all(60 <= d <= 140 for d in deciles), deciles  # ~100 each: uniform, not bunched
    assert min(offsets) < bound * 0.01 and max(offsets) > bound * 0.99


def test_no_jitter_or_no_window_moves_nothing():
    assert jitter_offset("a", timedelta(hours=720), None) == timedelta(0)
    assert jitter_offset("a", timedelta(hours=720), Decimal(0)) == timedelta(0)
    assert jitter_offset("a", timedelta(0), Decimal("0.5")) == timedelta(0)


# ---- in the planner ------------------------------------------------------------------------------------------

def _fleet(created_hours_ago: int) -> list[Any]:
    # node_share("a") ~ 0.79, node_share("d") ~ 0.10
    assert node_share("a") > 0.75 and node_share("d") < 0.12
    np = nodepool(consolidate_after="Never", requirements=REQ, expire_after="720h", budgets=[{"nodes": "100%"}])
    created = AT - timedelta(hours=created_hours_ago)
    return [np, node_and_claim("a", created=created), node_and_claim("d", created=created),
            node_and_claim("spare", created=AT - timedelta(hours=1)), pod("x-1", "a"), pod("y-1", "d")]


def test_jitter_expires_a_node_early_by_its_own_share():
    # created 700 h ago, expireAfter 720 h, jitter 10% (72 h): "a" expires ~57 h early (past), "d" ~7 h early (not yet)
    objs = _fleet(700)
    assert plan(snapshot(*objs), AT).commands == []
    result = plan(snapshot(*objs, policy(expiration={"jitter": "10%"})), AT)
    assert [(c.method, c.nodes) for c in result.commands] == [("Expiration", ["a"])]
    again = plan(snapshot(*objs, policy(expiration={"jitter": "10%"})), AT + timedelta(seconds=10))
    assert [(c.method, c.nodes) for c in again.commands] == [("Expiration", ["a"])]  # stable across passes


def test_jitter_moves_graceful_expiry_earlier_by_the_same_share():
    # created 590 h ago, gracefulExpireAfter 600 h, jitter 10% (60 h): "a" starts ~47 h early, "d" ~6 h early (not yet)
    objs = _fleet(590)
    graceful = {"gracefulExpireAfter": "600h"}
    assert plan(snapshot(*objs, policy(expiration=graceful)), AT).commands == []
    (cmd,) = plan(snapshot(*objs, policy(expiration={**graceful, "jitter": "10%"})), AT).commands
    assert (cmd.method, cmd.reason, cmd.nodes) == ("GracefulExpiration", "Expiring", ["a"])
