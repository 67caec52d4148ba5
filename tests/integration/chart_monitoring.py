"""The chart's monitoring objects as tests read them: the values that turn each on, the metric names their
alert rules and dashboard query, and the names a running operator's ``/metrics`` declares
(tests/integration/test_chart.py renders and checks them; tests/e2e/test_helm_node.py installs them).
"""

from __future__ import annotations

import json
import re
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

MONITORING_ON = (
    "metrics.serviceMonitor.enabled=true",
    "metrics.prometheusRule.enabled=true",
    "metrics.grafanaDashboard.enabled=true",
    "podDisruptionBudget.enabled=true",
)
MONITORING_OFF = (
    "metrics.serviceMonitor.enabled=false",
    "metrics.prometheusRule.enabled=false",
    "metrics.grafanaDashboard.enabled=false",
    "podDisruptionBudget.enabled=false",
)
DASHBOARD_KEY = "kafka-placement-operator.json"
# Every series the rules and the dashboard use is one of the operator's: all are named kafka_placement_*.
_METRIC = re.compile(r"\bkafka_placement_[a-z0-9_]+\b")
# The sample names each metric type exposes (prometheus_client's text format).
_SUFFIXES = {
    "counter": ("_total", "_created"),
    "gauge": ("",),
    "histogram": ("_bucket", "_count", "_sum", "_created"),
    "summary": ("", "_count", "_sum", "_created"),
}


def rule_exprs(docs: list[dict[str, Any]]) -> list[str]:
    """The expressions of the rendered PrometheusRule's rules."""
    rule = next(d for d in docs if d["kind"] == "PrometheusRule")
    return [r["expr"] for g in rule["spec"]["groups"] for r in g["rules"]]


def dashboard(docs: list[dict[str, Any]]) -> dict[str, Any]:
    cm = next(d for d in docs if d["kind"] == "ConfigMap" and DASHBOARD_KEY in d.get("data", {}))
    board: dict[str, Any] = json.loads(cm["data"][DASHBOARD_KEY])
    return board


def dashboard_exprs(board: dict[str, Any]) -> list[str]:
    """The queries of the dashboard's panels and of its template variables."""
    out = [t["expr"] for p in board["panels"] for t in p.get("targets", ())]
    out += [v["definition"] for v in board["templating"]["list"] if v.get("definition")]
    return out


def metric_names(exprs: list[str]) -> set[str]:
    return {m for e in exprs for m in _METRIC.findall(e)}


def exposed_names(metrics_text: str) -> set[str]:
    """The sample names a ``/metrics`` page declares: the samples it has, and for each family declared
    (``# TYPE``), the names of its type (a labelled metric has no sample before its first labels)."""
    out: set[str] = set()
    for family in text_string_to_metric_families(metrics_text):
        out.update(s.name for s in family.samples)
        out.update(family.name + suffix for suffix in _SUFFIXES.get(family.type, ("",)))
    return out
