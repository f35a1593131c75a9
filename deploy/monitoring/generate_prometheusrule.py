"""Writes prometheusrule.yaml (a Prometheus Operator PrometheusRule) from nodeflow-rules.yaml, the rules file
`promtool` tests, so the alerts a cluster loads are the tested ones (tests/deploy/test_alert_rules.py checks
the two are in step). Run: `.venv/bin/python deploy/monitoring/generate_prometheusrule.py`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
RULES = HERE / "nodeflow-rules.yaml"
OUTPUT = HERE / "prometheusrule.yaml"
HEADER = ("# Generated from nodeflow-rules.yaml by generate_prometheusrule.py: edit that file, then regenerate.\n"
          "# Prometheus Operator loads it when its ruleSelector matches these labels (kube-prometheus-stack: set\n"
          "# `release: <your release>` in an overlay, or ruleSelectorNilUsesHelmValues=false).\n")


def prometheus_rule(rules: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {"name": "nodeflow", "namespace": "nodeflow",
                     "labels": {"app.kubernetes.io/name": "nodeflow", "app.kubernetes.io/component": "monitoring"}},
        "spec": {"groups": rules["groups"]},
    }


def render() -> str:
    rules = yaml.safe_load(RULES.read_text())
    return HEADER + yaml.safe_dump(prometheus_rule(rules), sort_keys=False, width=4096)


if __name__ == "__main__":
    OUTPUT.write_text(render())
    print(f"wrote {OUTPUT}")
