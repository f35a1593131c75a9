"""The alerts in deploy/monitoring: promtool checks and unit-tests them (series that must fire each alert and
series that must not), the PrometheusRule is the tested rules file, and the rules and the Grafana dashboard read
only metrics nodeflow exports (telemetry/metrics.py's registry).

promtool comes from Debian's `prometheus` package, which scripts/setup.sh installs when it is missing.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from telemetry.metrics import REGISTRY

ROOT = Path(__file__).resolve().parents[2]
MONITORING = ROOT / "deploy" / "monitoring"
RULES = MONITORING / "nodeflow-rules.yaml"
RULE_TESTS = sorted((MONITORING / "tests").glob("*.yaml"))
DASHBOARD = MONITORING / "nodeflow-dashboard.json"
# Series Prometheus itself makes, which the rules may read besides nodeflow's own.
PROMETHEUS_SERIES = {"up"}
PROMQL_WORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "offset", "bool", "and", "or",
                "unless", "inf", "nan"}


def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("promtool")
    if exe is None:
        pytest.fail("promtool is not installed: run ./scripts/setup.sh (it installs Debian's `prometheus` package "
                    "with apt-get when run as root or with sudo), or `apt-get install prometheus`")
    return subprocess.run([exe, *args], capture_output=True, text=True, timeout=120, cwd=ROOT)


@cache
def rules() -> dict[str, Any]:
    return yaml.safe_load(RULES.read_text())


def alerts() -> dict[str, dict[str, Any]]:
    return {r["alert"]: r for g in rules()["groups"] for r in g["rules"] if "alert" in r}


def exposed_names() -> set[str]:
    """Every series name the worker's /metrics can show, from the registry's families and their types."""
    suffixes = {"counter": ("_total", "_created"), "gauge": ("",), "histogram": ("_bucket", "_sum", "_count",
                                                                                "_created"),
                "summary": ("_sum", "_count", "_created"), "info": ("_info",)}
    return {f.name + s for f in REGISTRY.collect() for s in suffixes.get(f.type, ("",))}


def metric_names(expr: str) -> set[str]:
    """The series names a PromQL expression reads: label matchers, ranges, strings, grouping lists, function
    calls and keywords removed, what is left that looks like a name is one."""
    text = re.sub(r'"[^"]*"', "", expr)
    text = re.sub(r"\{[^}]*\}|\[[^\]]*\]", " ", text)
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    text = re.sub(r"\b[a-z_]+\s*\(", "(", text)
    return {t for t in re.findall(r"\b[a-zA-Z_:][a-zA-Z0-9_:]*\b", text) if t.lower() not in PROMQL_WORDS}


def dashboard_exprs() -> list[str]:
    def walk(panels: list[dict[str, Any]]) -> list[str]:
        out = []
        for p in panels:
            out += [t["expr"] for t in p.get("targets", []) if t.get("expr")]
            out += walk(p.get("panels", []))
        return out

    return walk(json.loads(DASHBOARD.read_text())["panels"])


def test_promtool_checks_the_rules_file() -> None:
    proc = promtool("check", "rules", str(RULES.relative_to(ROOT)))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"SUCCESS: {len(alerts())} rules found" in proc.stdout


def test_promtool_rule_unit_tests_pass() -> None:
    assert RULE_TESTS
    proc = promtool("test", "rules", *(str(p.relative_to(ROOT)) for p in RULE_TESTS))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS" in proc.stdout and "FAILED" not in proc.stdout


def test_promtool_test_fails_a_rule_that_does_not_fire(tmp_path: Path) -> None:
    """The unit tests can fail: with the drain threshold raised to a day, the stuck drain no longer fires."""
    broken = RULES.read_text().replace("nodeflow_drain_started_timestamp_seconds) > 3600",
                                       "nodeflow_drain_started_timestamp_seconds) > 86400")
    assert broken != RULES.read_text()
    (tmp_path / "nodeflow-rules.yaml").write_text(broken)
    (tmp_path / "tests").mkdir()
    for p in RULE_TESTS:
        shutil.copy(p, tmp_path / "tests" / p.name)
    exe = shutil.which("promtool") or "promtool"
    proc = subprocess.run([exe, "test", "rules", *(str(tmp_path / "tests" / p.name) for p in RULE_TESTS)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "NodeflowDrainStuck" in proc.stdout + proc.stderr, proc.stdout + proc.stderr


def test_every_alert_is_tested_firing_and_not_firing() -> None:
    firing: set[str] = set()
    silent: set[str] = set()
    for path in RULE_TESTS:
        for case in yaml.safe_load(path.read_text())["tests"]:
            for check in case.get("alert_rule_test", []):
                (firing if check.get("exp_alerts") else silent).add(check["alertname"])
    names = set(alerts())
    assert len(names) >= 8
    assert not names - firing, f"alerts with no test that fires them: {sorted(names - firing)}"
    assert not names - silent, f"alerts with no test that must not fire them: {sorted(names - silent)}"
    assert not (firing | silent) - names, f"tests of alerts that do not exist: {sorted((firing | silent) - names)}"


def test_every_alert_has_a_severity_and_says_what_to_do() -> None:
    for name, rule in alerts().items():
        assert rule["labels"]["severity"] in ("warning", "critical"), name
        assert rule["annotations"]["summary"] and len(rule["annotations"]["description"]) > 80, name


def test_the_prometheusrule_is_the_tested_rules_file() -> None:
    """deploy/monitoring/prometheusrule.yaml is generated from nodeflow-rules.yaml and must not drift from it."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("generate_prometheusrule", MONITORING / "generate_prometheusrule.py")
    assert spec is not None and spec.loader is not None
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    shipped = (MONITORING / "prometheusrule.yaml").read_text()
    assert shipped == generator.render(), ("deploy/monitoring/prometheusrule.yaml is stale: run "
                                           ".venv/bin/python deploy/monitoring/generate_prometheusrule.py")
    doc = yaml.safe_load(shipped)
    assert (doc["apiVersion"], doc["kind"]) == ("monitoring.coreos.com/v1", "PrometheusRule")
    assert doc["spec"]["groups"] == rules()["groups"]


def test_the_metric_name_parser_finds_names() -> None:
    expr = ('time() - max by (node, reason) (nodeflow_drain_started_timestamp_seconds{node!="x"}) > 3600 or '
            'sum(rate(nodeflow_evictions_total[$__rate_interval])) unless absent(up{job="a"} == 1) offset 5m')
    assert metric_names(expr) == {"nodeflow_drain_started_timestamp_seconds", "nodeflow_evictions_total", "up"}


def test_rules_read_only_metrics_nodeflow_exports() -> None:
    exposed = exposed_names()
    used = {n for rule in alerts().values() for n in metric_names(rule["expr"])}
    unknown = sorted(used - exposed - PROMETHEUS_SERIES)
    assert not unknown, f"the rules read metrics telemetry/metrics.py does not define: {unknown}"


def test_the_dashboard_reads_only_metrics_nodeflow_exports_and_covers_the_alerts() -> None:
    exprs = dashboard_exprs()
    assert len(exprs) >= 20
    used = {n for e in exprs for n in metric_names(e)}
    unknown = sorted(used - exposed_names())
    assert not unknown, f"the dashboard reads metrics telemetry/metrics.py does not define: {unknown}"
    alerted = {n for rule in alerts().values() for n in metric_names(rule["expr"])} - PROMETHEUS_SERIES
    assert not alerted - used, f"metrics the alerts read but the dashboard does not show: {sorted(alerted - used)}"
    dashboard = json.loads(DASHBOARD.read_text())
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids)) and dashboard["uid"] == "nodeflow"
