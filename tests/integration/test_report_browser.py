"""The plan report (`kafka-placement report`) in a real headless Chromium (Debian's package; tests/
integration/browser.py drives it over the DevTools protocol): for the golden scenarios, a demo-like
plan and a snapshot whose rack names and dir paths hold HTML, the page loads with no console error,
failed load or dialog; each chart has one bar group per broker (dir, rack unit, batch) as the laid-out
DOM shows it, bar heights in proportion to their values and labels that do not overlap; the numbers
in the tables equal those of `plan --summary`; nothing from the input became an element.

Needs no Kafka: the plans come from snapshots on disk. A full-page PNG of every report is kept in
``$KP_ARTIFACTS`` (default ``$KP_CACHE/artifacts``, outside the checkout), under report-browser/.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.integration.browser import Browser, Tab

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "testdata" / "golden"
CLI = str(Path(sys.executable).parent / "kafka-placement")
EVIL_RACK = '"><img src=x onerror=alert(1)>'
EVIL_DIR = "/data/<script>alert(2)</script>"

# What the page shows, read after layout: per chart its bar groups (tooltip, the bars' series, user-unit
# heights and rendered widths, the label's box), the line labels' boxes; every table's cells as text, a
# cell of bytes as its exact number (data-value: the page shows it in units); the cells a person reads.
PROBE = """(() => {
  const box = e => { const r = e.getBoundingClientRect();
                     return {x: r.left, y: r.top, w: r.width, h: r.height, text: e.textContent}; };
  const charts = {};
  for (const svg of document.querySelectorAll('svg[id]')) {
    charts[svg.id] = {
      width: svg.getBoundingClientRect().width, box: box(svg),
      groups: [...svg.querySelectorAll('g.group')].map(g => ({
        title: g.querySelector('title').textContent,
        bars: [...g.querySelectorAll('rect')].map(r => ({
          series: r.getAttribute('class'), h: r.getBBox().height, w: r.getBoundingClientRect().width})),
        label: g.querySelector('text') ? box(g.querySelector('text')) : null,
      })),
      lineLabels: [...svg.querySelectorAll(':scope > text')].slice(1).map(box),
    };
  }
  const tables = {};
  for (const t of document.querySelectorAll('table[id]'))
    tables[t.id] = [...t.querySelectorAll('tbody tr, tr')].filter(tr => !tr.closest('thead'))
      .map(tr => [...tr.children].map(c => c.dataset.value ?? c.textContent));
  const shown = {};
  for (const t of document.querySelectorAll('table[id]'))
    shown[t.id] = [...t.querySelectorAll('tbody tr, tr')].filter(tr => !tr.closest('thead'))
      .map(tr => [...tr.children].map(c => c.textContent));
  const summary = {};
  for (const td of document.querySelectorAll('td[data-key]')) summary[td.dataset.key] = td.dataset.value;
  const handlers = [...document.querySelectorAll('*')].flatMap(
    e => [...e.attributes].filter(a => a.name.startsWith('on')).map(a => e.tagName + ' ' + a.name));
  return {charts, tables, shown, summary, handlers,
          headline: document.getElementById('headline').textContent,
          notes: [...document.querySelectorAll('p.note')].map(p => p.textContent),
          images: document.images.length, scripts: document.scripts.length,
          embeds: document.querySelectorAll('iframe, object, embed, link, base').length};
})()"""


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    b = Browser()
    try:
        yield b
    finally:
        b.close()


@pytest.fixture(scope="module")
def artifacts() -> Path:
    cache = Path(os.environ.get("KP_CACHE", Path.home() / ".cache" / "kafka-placement"))
    out = Path(os.environ.get("KP_ARTIFACTS", cache / "artifacts")) / "report-browser"
    out.mkdir(parents=True, exist_ok=True)
    return out


def cli(*args: str) -> None:
    r = subprocess.run([CLI, *args], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"kafka-placement {args[0]} exited {r.returncode}: {r.stderr[-2000:]}"


def plan_and_report(d: Path, snapshot: Path, intents: Path) -> tuple[dict[str, Any], Path]:
    """`plan --summary` then `report` of that plan, as a user runs them."""
    plan, summary, page = d / "plan.json", d / "summary.json", d / "report.html"
    cli(
        "plan",
        "--snapshot",
        str(snapshot),
        "--intents",
        str(intents),
        "-o",
        str(plan),
        "--summary",
        str(summary),
    )
    cli(
        "report", "--snapshot", str(snapshot), "--plan", str(plan), "--intents", str(intents), "-o", str(page)
    )
    return json.loads(summary.read_text()), page


def show(browser: Browser, page: Path, png: Path) -> tuple[Tab, dict[str, Any]]:
    tab = browser.load(page.as_uri())
    assert tab.problems == [], tab.problems  # console errors, exceptions, failed loads
    assert tab.dialogs == [], tab.dialogs  # a script ran
    dom: dict[str, Any] = tab.evaluate(PROBE)
    shot = tab.screenshot(png)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000
    return tab, dom


def overlaps(a: dict[str, float], b: dict[str, float]) -> bool:
    return (
        a["x"] < b["x"] + b["w"]
        and b["x"] < a["x"] + a["w"]
        and a["y"] < b["y"] + b["h"]
        and b["y"] < a["y"] + a["h"]
    )


def check_chart(chart: dict[str, Any], groups: int, series: tuple[str, ...]) -> None:
    """``groups`` bar groups, each with one bar per series, heights in proportion to the tooltip's values,
    every bar laid out with a width, and no two labels (or reference-line labels) overlapping."""
    assert chart["width"] > 500
    assert len(chart["groups"]) == groups
    bars = [
        (bar, int(v.rsplit(" ", 1)[1]))
        for g in chart["groups"]
        for bar, v in zip(g["bars"], g["title"].split(": ", 1)[1].split("; "), strict=True)
    ]
    for g in chart["groups"]:
        assert tuple(b["series"] for b in g["bars"]) == series
        assert all(b["w"] > 0 for b in g["bars"])
    tallest, top = max(bars, key=lambda x: x[1])
    for bar, value in bars:
        assert abs(bar["h"] - tallest["h"] * value / top) <= 0.2, (bar, value, tallest, top)
    group_labels = [g["label"] for g in chart["groups"] if g["label"] is not None]
    titles = [g["title"].split(": ", 1)[0] for g in chart["groups"]]
    if len(set(titles)) == len(titles):  # what differs stays different, shortened or not
        assert len({label["text"] for label in group_labels}) == len(group_labels), group_labels
    labels = group_labels + chart["lineLabels"]
    for label in labels:  # inside the chart, not cut off
        assert overlaps(label, chart["box"]) and label["y"] >= chart["box"]["y"], (label, chart["box"])
    for i, a in enumerate(labels):
        for b in labels[i + 1 :]:
            assert not overlaps(a, b), f"labels overlap: {a} {b}"


def check_report(dom: dict[str, Any], summary: dict[str, Any], snapshot: dict[str, Any]) -> None:
    brokers = sorted(b["id"] for b in snapshot["brokers"])
    charts, tables, cells = dom["charts"], dom["tables"], dom["summary"]
    assert dom["scripts"] == 0 and dom["images"] == 0 and dom["embeds"] == 0 and dom["handlers"] == []
    # charts: one group per broker, dir, rack unit, moving broker and batch
    check_chart(charts["chart-brokers"], len(brokers), ("before", "after"))
    assert [int(g["title"].split(":")[0]) for g in charts["chart-brokers"]["groups"]] == brokers
    assert len(tables["brokers"]) == len(brokers)
    moving = [r for r in tables["brokers"] if int(r[6]) or int(r[7])]
    if moving:
        check_chart(charts["chart-flows"], len(moving), ("in", "out"))
    else:  # moves between dirs only
        assert "chart-flows" not in charts and "nothing to chart" in dom["notes"]
    if "dirs" in tables:
        check_chart(charts["chart-dirs"], len(tables["dirs"]), ("before", "after"))
    for level in range(1, 4):
        units = [r for r in tables.get("units", []) if r[0] == str(level)]
        if units:
            check_chart(charts[f"chart-racks-{level}"], len(units), ("before", "after"))
    check_chart(charts["chart-batches"], summary["batches"]["count"], ("bytes",))
    # tables: the summary's numbers as `plan --summary` wrote them
    assert summary["planId"] in dom["headline"] and cells["planId"] == summary["planId"]
    for key in (
        "partitionsChanged",
        "replicaMoves",
        "intraBrokerMoves",
        "leaderChanges",
        "networkBytes",
        "intraBrokerBytes",
        "bytesToMove",
        "lowerBoundBytes",
        "bytesOverLowerBound",
        "hardViolationsAfter",
    ):
        assert cells[key] == str(summary[key]), key
    assert cells["batches"] == str(summary["batches"]["count"])
    for when in ("Before", "After"):
        for k, v in summary[f"balance{when}"].items():
            assert cells[f"{k} ({when.lower()})"] == str(v), k
    for k, v in summary["violationsAfter"].items():
        assert cells[f"violations {k} (before → after)"] == f"{summary['violationsBefore'][k]} → {v}"
    # a person reads units, not raw byte counts: every bytes cell of the brokers table ends with a unit
    assert all(c.endswith("B") for r in dom["shown"]["brokers"] for c in (r[2], r[3], r[6], r[7], r[8]))
    assert sum(int(r[6]) for r in tables["brokers"]) == summary["networkBytes"]
    assert sum(int(r[7]) for r in tables["brokers"]) == summary["networkBytes"]
    assert sum(int(r[8]) for r in tables["brokers"]) == summary["intraBrokerBytes"]
    if not any(n.endswith("topics, those moving the most bytes.") for n in dom["notes"]):
        assert sum(int(r[3]) for r in tables["topics"]) == summary["bytesToMove"]


@pytest.mark.parametrize("name", sorted(p.name for p in GOLDEN.iterdir() if (p / "plan.json").exists()))
def test_golden_report_in_chromium(name: str, browser: Browser, artifacts: Path, tmp_path: Path) -> None:
    d = GOLDEN / name
    summary, page = plan_and_report(tmp_path, d / "snapshot.json", d / "intents.yaml")
    assert json.loads((tmp_path / "plan.json").read_text()) == json.loads((d / "plan.json").read_text())
    tab, dom = show(browser, page, artifacts / f"golden-{name}.png")
    try:
        check_report(dom, summary, json.loads((d / "snapshot.json").read_text()))
    finally:
        tab.close()


def demo_snapshot() -> dict[str, Any]:
    """What `make demo` plans (scripts/demo.py): 3 brokers on racks /dc1/r1, /dc1/r2, /dc2/r1 with two
    dirs each, topics orders (6 partitions) and payments (3) with the demo's replica assignments, 15000
    records of 300 bytes per topic; sizes as Kafka reports them, spread by partition."""
    racks = {1: "/dc1/r1", 2: "/dc1/r2", 3: "/dc2/r1"}
    dirs = ("/var/lib/kafka/data-0", "/var/lib/kafka/data-1")
    topics = {
        "orders": [[1, 3], [3, 2], [2, 1], [3, 1], [1, 2], [2, 3]],
        "payments": [[3, 1], [1, 3], [2, 3]],
    }
    partitions = [
        {
            "topic": t,
            "partition": i,
            "replicas": r,
            "logDirs": [dirs[(i + k) % 2] for k in range(len(r))],
            "sizeBytes": 15000 * 370 // len(a) + 1013 * i,
        }
        for t, a in topics.items()
        for i, r in enumerate(a)
    ]
    gib = 1 << 30
    return {
        "version": 1,
        "brokers": [
            {
                "id": b,
                "rack": rack,
                "logDirs": [{"path": p, "totalBytes": 20 * gib, "usableBytes": 19 * gib} for p in dirs],
            }
            for b, rack in racks.items()
        ],
        "partitions": partitions,
    }


def test_demo_plan_report_in_chromium(browser: Browser, artifacts: Path, tmp_path: Path) -> None:
    snap = demo_snapshot()
    (tmp_path / "snapshot.json").write_text(json.dumps(snap))
    # the example resources the demo applies: cordon and drain broker 1's first dir, retire broker 3,
    # the rack-spread policy (Advise)
    intents = "\n---\n".join(
        (REPO / "examples" / f"{n}.yaml").read_text()
        for n in ("log-dir-cordon", "broker-decommission", "placement-policy")
    )
    (tmp_path / "intents.yaml").write_text(intents)
    summary, page = plan_and_report(tmp_path, tmp_path / "snapshot.json", tmp_path / "intents.yaml")
    assert summary["partitionsChanged"] > 0
    tab, dom = show(browser, page, artifacts / "demo.png")
    try:
        check_report(dom, summary, snap)
        after = {int(r[0]): int(r[3]) for r in dom["tables"]["brokers"]}
        assert after[3] == 0  # retired
    finally:
        tab.close()


def test_html_in_rack_names_and_dir_paths_stays_text(
    browser: Browser, artifacts: Path, tmp_path: Path
) -> None:
    snap = demo_snapshot()
    snap["brokers"][0]["rack"] = EVIL_RACK
    snap["brokers"][1]["logDirs"][0]["path"] = EVIL_DIR
    for p in snap["partitions"]:
        p["logDirs"] = [
            EVIL_DIR if (b == 2 and d.endswith("data-0")) else d
            for b, d in zip(p["replicas"], p["logDirs"], strict=True)
        ]
    (tmp_path / "snapshot.json").write_text(json.dumps(snap))
    (tmp_path / "intents.yaml").write_text(
        "kind: BrokerDecommission\nspec: {brokers: [3]}\n---\nkind: LogDirCordon\n"
        f"spec: {{broker: 2, logDirs: [{json.dumps(EVIL_DIR)}], drain: true}}\n---\n"
        "kind: PlacementPolicy\nspec: {topics: {include: ['*']}, rackAwareness: {separator: /, levels: 1}}\n"
    )
    summary, page = plan_and_report(tmp_path, tmp_path / "snapshot.json", tmp_path / "intents.yaml")
    tab, dom = show(browser, page, artifacts / "escaped.png")  # no dialog, no failed load of "x"
    try:
        check_report(dom, summary, snap)
        tables = dom["tables"]
        assert {r[0]: r[1] for r in tables["brokers"]}["1"] == EVIL_RACK  # shown as text, whole
        assert EVIL_DIR in {r[1] for r in tables["dirs"]}
        assert EVIL_RACK in {r[1] for r in tables["units"]}
        assert tab.evaluate("document.querySelectorAll('img, script').length") == 0
    finally:
        tab.close()


def test_the_browser_catches_a_script_that_runs(browser: Browser, tmp_path: Path) -> None:
    """The harness is not blind: the same markup unescaped runs its handler, seen as a dialog and a
    failed load."""
    page = tmp_path / "unescaped.html"
    page.write_text(f"<!DOCTYPE html><html><body><table><tr><td>{EVIL_RACK}</td></tr></table></body></html>")
    tab = browser.load(page.as_uri())
    try:
        assert tab.dialogs == ["alert: 1"]
        assert any("ERR_FILE_NOT_FOUND" in p for p in tab.problems), tab.problems
    finally:
        tab.close()
