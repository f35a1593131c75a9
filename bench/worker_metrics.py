"""The worker's own Prometheus counters read over HTTP (its `--metrics-port`), so a bench can say what the
worker did in a phase: how many disruption commands it validated and why the others failed (by typed verdict)."""

from __future__ import annotations

import urllib.request

from prometheus_client.parser import text_string_to_metric_families

VALIDATIONS = "nodeflow_disruption_validations"


def validations(port: int) -> dict[str, float]:
    """result -> validations so far (summed over methods); empty when the worker does not answer."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
            text = resp.read().decode()
    except OSError:
        return {}
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        if family.name != VALIDATIONS:
            continue
        for sample in family.samples:
            if sample.name == f"{VALIDATIONS}_total":
                result = sample.labels["result"]
                out[result] = out.get(result, 0.0) + sample.value
    return out


def since(before: dict[str, float], after: dict[str, float]) -> dict[str, int]:
    """What the counters added between two reads (results that did not move are left out)."""
    return {k: int(v - before.get(k, 0.0)) for k, v in sorted(after.items()) if v - before.get(k, 0.0) > 0}
