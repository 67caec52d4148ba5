"""The plan report: its data (``planning.report``) and its HTML page (``planning.report_html``)."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from kafka_placement.model.intents import Intents
from kafka_placement.model.plan import PartitionTarget, Plan
from kafka_placement.model.snapshot import ClusterSnapshot
from kafka_placement.model.units import binary_bytes as _short
from kafka_placement.planning import report as report_mod
from kafka_placement.planning.optimizer import compute_plan, summarize
from kafka_placement.planning.report import build_report
from kafka_placement.planning.report_html import MAX_LABEL, _bars, _shorten, render

GOLDEN = Path(__file__).resolve().parents[2] / "testdata" / "golden"
VOID = {"meta", "br", "hr", "img", "input", "link", "rect", "line", "polyline"}


class Page(HTMLParser):
    """Checks the page is well formed (every element closed in order) and collects what tests need."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, dict[str, str | None]]] = []
        self.groups: dict[str, int] = {}  # svg id -> bar groups
        self.cells: dict[str, str] = {}  # summary data-key -> text
        self.values: dict[str, str] = {}  # summary data-key -> data-value (the summary JSON's)
        self.tables: dict[str, list[list[str]]] = {}
        self.raw: dict[str, list[list[str]]] = {}  # the same cells, a cell's data-value where it has one
        self.text: list[str] = []
        self._cell: str | None = None

    def _in(self, tag: str) -> dict[str, str | None] | None:
        return next((a for t, a in reversed(self.stack) if t == tag), None)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "g" and a.get("class") == "group":
            svg = self._in("svg")
            assert svg is not None
            key = svg["id"] or ""
            self.groups[key] = self.groups.get(key, 0) + 1
        if tag == "tr" and (table := self._in("table")) is not None:
            self.tables.setdefault(table["id"] or "", []).append([])
            self.raw.setdefault(table["id"] or "", []).append([])
        if tag in ("td", "th"):
            self._cell = ""
        if tag == "td" and a.get("data-key"):
            self.cells[a["data-key"] or ""] = ""
            self.values[a["data-key"] or ""] = a.get("data-value") or ""
        if tag not in VOID:
            self.stack.append((tag, a))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        assert self.stack and self.stack[-1][0] == tag, f"</{tag}> closes {self.stack[-1:]}"
        _, a = self.stack.pop()
        if tag in ("td", "th") and self._cell is not None:
            table = self._in("table")
            if table is not None:
                self.tables[table["id"] or ""][-1].append(self._cell)
                self.raw[table["id"] or ""][-1].append(a.get("data-value") or self._cell)
            if a.get("data-key"):
                self.cells[a["data-key"] or ""] = self._cell
            self._cell = None

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._cell is not None:
            self._cell += data


def parse(page: str) -> Page:
    p = Page()
    p.feed(page)
    p.close()
    assert p.stack == [], p.stack
    return p


def golden(name: str) -> tuple[ClusterSnapshot, Plan, Intents]:
    d = GOLDEN / name
    return (
        ClusterSnapshot.loads((d / "snapshot.json").read_text()),
        Plan.loads((d / "plan.json").read_text()),
        Intents.loads((d / "intents.yaml").read_text()),
    )


@pytest.mark.parametrize("name", ["all", "rack-repair"])
def test_golden_report_is_well_formed_self_contained_and_matches_the_summary(name: str) -> None:
    snap, plan, intents = golden(name)
    report = build_report(snap, plan, intents)
    summary = summarize(snap, intents.enforced_only(), plan, 5)
    assert report.summary == summary  # the planner's own summary, not a recomputation
    doc = summary.to_json()
    page = render(report)
    assert "http://" not in page and "https://" not in page and "<script" not in page.lower()
    assert " src=" not in page and "@import" not in page and "url(" not in page
    found = parse(page)
    assert found.groups["chart-brokers"] == len(snap.brokers)
    assert found.groups["chart-batches"] == doc["batches"]["count"]
    for key in ("partitionsChanged", "replicaMoves", "intraBrokerMoves", "bytesToMove", "lowerBoundBytes"):
        assert found.values[key] == str(doc[key])  # the summary's own number, for machines
    assert found.cells["planId"] == found.values["planId"] == plan.plan_id
    assert found.values["bytesOverLowerBound"] == str(doc["bytesOverLowerBound"])
    assert found.values["batches"] == str(doc["batches"]["count"])
    # for a person: words and units, no camelCase key, no raw byte count
    assert found.cells["bytesToMove"] == _short(doc["bytesToMove"]) and found.cells["bytesToMove"][-1] == "B"
    assert found.cells["bytesOverLowerBound"] == f"{(doc['bytesOverLowerBound'] - 1) * 100:.1f} %"
    assert found.cells["partitionsChanged"] == f"{doc['partitionsChanged']:,}"
    labels = [row[0] for row in found.tables["summary"]]
    assert "Copied in all" in labels and not [x for x in labels if re.search(r"[a-z][A-Z]", x)], labels
    assert plan.plan_id in "".join(found.text[:20])  # at the top
    brokers = found.raw["brokers"][1:]  # (bytes read from data-value: the cells show units)
    assert len(brokers) == len(snap.brokers)
    moved_in = sum(int(row[6]) for row in brokers)
    assert moved_in == doc["networkBytes"]
    between_dirs = sum(int(row[8]) for row in brokers)
    assert between_dirs == doc["intraBrokerBytes"]
    assert sum(report.batch_bytes) == doc["bytesToMove"]
    assert sum(int(r[3]) for r in found.raw["topics"][1:]) == doc["bytesToMove"]
    # every cell a person reads: no raw byte count (a number of 5+ digits without a unit), no camelCase
    shown = [c for t in found.tables.values() for row in t for c in row] + [
        c for row in found.tables["summary"] for c in row
    ]
    assert not [c for c in shown if re.fullmatch(r"-?\d{5,}(\.\d+)?", c)], shown
    assert not [c for c in shown if re.search(r"[a-z][A-Z][a-z]", c)], shown  # (not KiB, GiB)
    headline = page[page.index('<p id="headline">') :].split("</p>")[0]
    assert not re.search(r"\d{5,}", headline.replace(plan.plan_id, "")), headline


@pytest.mark.parametrize("name", ["all", "drain", "scale-out"])
def test_a_report_with_the_planners_tally_is_the_report_counted_afresh(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The operator's plan review reuses the tally the planner made (PlanResult.tally): the same report,
    from one count of the partitions instead of two, and the tally is not changed by a report."""
    snap, _, intents = golden(name)
    result = compute_plan(snap, intents, max_moves_per_broker=5)
    assert result.tally is not None and not result.plan.empty
    afresh = build_report(snap, result.plan, intents, 2)
    counted: list[object] = []
    real = report_mod.plan_quality.tally
    monkeypatch.setattr(report_mod.plan_quality, "tally", lambda *a: counted.append(a) or real(*a))
    reused = build_report(snap, result.plan, intents, 2, result.tally)
    assert counted == [] and reused == afresh
    assert build_report(snap, result.plan, intents, 2, result.tally) == afresh  # reusable


def test_rack_units_are_counted_at_every_level_of_the_policy() -> None:
    snap, plan, intents = golden("all")
    r = build_report(snap, plan, intents)
    assert r.rack_levels == 2
    replicas = sum(len(p.replicas) for p in snap.partitions)
    for level in (1, 2):
        units = [u for u in r.units if u.level == level]
        assert sum(u.replicas[0] for u in units) == replicas
        assert (
            all("/" not in u.unit for u in units)
            if level == 1
            else all(u.unit.count("/") == 1 for u in units)
        )
    assert {u.unit for u in r.units if u.level == 1} == {"dc1", "dc2", "dc3"}


def test_without_intents_the_lower_bound_is_not_claimed() -> None:
    snap, plan, _ = golden("decommission")
    r = build_report(snap, plan)
    assert r.lower_bound is None and r.ratio is None and r.threshold is None
    page = render(r)
    parse(page)
    assert "not known (no intents given)" in page


def test_strings_from_the_input_are_escaped() -> None:
    evil = "<b>&\"x'</b>"
    doc = {
        "version": 1,
        "brokers": [
            {"id": b, "rack": f"/dc{b}{evil}/r1", "logDirs": [{"path": f"/data/{evil}{i}"} for i in range(2)]}
            for b in (1, 2)
        ],
        "partitions": [
            {
                "topic": "t.x_1-",
                "partition": 0,
                "replicas": [1],
                "logDirs": [f"/data/{evil}0"],
                "sizeBytes": 9,
            }
        ],
    }
    snap = ClusterSnapshot.from_json(doc)
    plan = Plan.of([PartitionTarget("t.x_1-", 0, (2,), (f"/data/{evil}1",))])
    page = render(build_report(snap, plan))
    assert evil not in page and "<b>&" not in page and "/r1'" not in page
    found = parse(page)
    assert any(evil in t for t in found.text)  # shown, as text
    assert found.groups["chart-brokers"] == 2


def test_long_lists_are_capped_and_say_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(report_mod, "MAX_BROKERS", 3)
    monkeypatch.setattr(report_mod, "MAX_TOPICS", 2)
    monkeypatch.setattr(report_mod, "MAX_MOVES", 4)
    snap, plan, intents = golden("all")
    r = build_report(snap, plan, intents)
    assert len(r.brokers) == 3 and r.brokers_count.total == len(snap.brokers)
    assert len(r.topics) <= 2 and len(r.moves) == 4 and r.moves_count.total == len(plan.partitions)
    assert [m.bytes for m in r.moves] == sorted((m.bytes for m in r.moves), reverse=True)
    page = render(r)
    found = parse(page)
    assert found.groups["chart-brokers"] == 3
    assert f"Showing 3 of {len(snap.brokers)} brokers" in page
    assert f"Showing 4 of {len(plan.partitions)} partitions" in page


def test_labels_keep_both_ends_and_reference_line_labels_do_not_collide() -> None:
    dirs = [f"{b}:/var/lib/kafka/data-{i}" for b in (1, 2) for i in (0, 1)]
    short = [_shorten(d) for d in dirs]
    assert len(set(short)) == len(dirs) and all(len(s) <= MAX_LABEL for s in short)
    assert short[0].startswith("1:/") and short[0].endswith("data-0") and _shorten("dc1/r2") == "dc1/r2"
    # a threshold just above the mean, the mean at the top: each label inside the chart, 12 units apart
    svg = _bars(
        "c", ["1", "2"], [("after", [100, 100])], [("mean", 100.0, "mean"), ("threshold", 99.0, "line")]
    )
    ys = sorted(float(y) for y in re.findall(r'<text x="952" y="([0-9.]+)" text-anchor="end">', svg))
    assert len(ys) == 2 and ys[0] >= 12 and ys[1] - ys[0] >= 12
    # many groups: labels upright, the chart taller
    many = _bars("c", dirs * 5, [("after", list(range(20)))])
    assert many.count('transform="rotate(-90') == 20 and 'viewBox="0 0 960 250"' not in many


def test_traffic_per_broker_before_and_after_is_in_the_report_only_with_rates() -> None:
    from dataclasses import replace

    snap, plan, intents = golden("decommission")
    assert "traffic" not in parse(render(build_report(snap, plan, intents))).tables
    rated = replace(snap, partitions=tuple(replace(p, bytes_in_per_sec=1e6) for p in snap.partitions))
    r = build_report(rated, plan, intents)
    rows = parse(render(r)).tables["traffic"]
    listed = r.summary.to_json()["traffic"]["brokers"]
    assert len(rows) == 1 + len(listed) > 1  # (the header row)
    # a decommissioned broker's network in goes to 0 after the plan
    gone = next(t for t in listed if t["id"] in intents.decommissioned)
    assert gone["networkIn"][0] > 0 and gone["networkIn"][1] == 0
