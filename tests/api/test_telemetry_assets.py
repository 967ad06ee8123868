"""The Grafana dashboard and the Prometheus alert rules in deploy/ parse, and every metric
they name is one /metrics exports (a renamed metric must not leave a blank panel or an
alert that can never fire)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from executions.metrics.metrics import metrics_text

pytestmark = pytest.mark.django_db

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
DASHBOARD = DEPLOY / "grafana" / "workflow-engine.json"
ALERTS = DEPLOY / "prometheus" / "alerts.yml"
#: Our metrics' prefixes: other identifiers in an expression are PromQL or label names.
OURS = re.compile(r"\b((?:workflows?|tasks?)_[a-z_]+)\b")
SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count")}


def exported() -> set[str]:
    names = set()
    for family in text_string_to_metric_families(metrics_text().decode()):
        names.add(family.name)
        names.update(family.name + suffix for suffix in SUFFIXES.get(family.type, ()))
    return names


def dashboard_exprs() -> Iterator[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    assert dashboard["panels"], "the dashboard has no panel"
    for panel in dashboard["panels"]:
        assert panel["targets"], f"panel {panel['title']!r} queries nothing"
        for target in panel["targets"]:
            yield target["expr"]
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            yield variable["query"]


def alert_exprs() -> Iterator[str]:
    rules = yaml.safe_load(ALERTS.read_text())
    for group in rules["groups"]:
        for rule in group["rules"]:
            assert {"alert", "expr", "labels", "annotations"} <= rule.keys(), rule
            yield rule["expr"]


@pytest.mark.parametrize("exprs", [dashboard_exprs, alert_exprs], ids=["grafana", "alerts"])
def test_every_metric_referenced_is_exported(exprs) -> None:
    available = exported()
    referenced = {name for expr in exprs() for name in OURS.findall(expr)}
    assert referenced, "no metric of ours referenced"
    missing = referenced - available
    assert not missing, f"referenced but not exported: {sorted(missing)}"


def test_the_seeds_metric_names_are_exported() -> None:
    seeds = {"workflows_started_total", "workflows_completed_total", "workflows_failed_total",
             "tasks_running", "task_retry_total", "task_duration_seconds_bucket",
             "task_queue_wait_seconds_bucket"}  # fmt: skip
    assert seeds <= exported()
