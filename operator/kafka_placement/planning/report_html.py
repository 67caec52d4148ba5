"""A plan's report (``report.Report``) as one self-contained HTML page: pure string building.

No JavaScript, no external resource (no URL at all): charts are inline SVG bar charts, styles one
inline CSS block with print rules. Every string that comes from the input (topics, racks, dir paths,
plan id) is escaped with ``html.escape``. The summary numbers come first, then the charts, then the
tables; every capped list says how much it shows. Lives beside the report's data (not in the CLI)
so the operator can render the same page. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from html import escape
from typing import Any

from ..model.units import binary_bytes, count, duration
from .report import Capped, Report

MAX_BATCH_BARS = 200  # batches beyond this are charted in equal groups
MAX_LABEL = 14  # characters of a bar group's label (the tooltip has it whole)
CHAR_W, LINE_H = 6.5, 12  # a 10px label's widest average character and its line, in chart units
WIDTH, HEIGHT, PAD = 960, 220, 48
STYLE = """
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222;max-width:1000px}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:.5em 0;font-size:.85em}
th,td{border:1px solid #ccc;padding:2px 6px;text-align:left}td.n{text-align:right}
svg{display:block;max-width:100%;height:auto}.before{fill:#9bb7d4}.after{fill:#d9822b}
.in{fill:#4a9a5b}.out{fill:#c0504d}.bytes{fill:#6b7fbf}.line{stroke:#b00;stroke-dasharray:4 3}
.mean{stroke:#555;stroke-dasharray:1 3}.cum{fill:none;stroke:#222}.axis{stroke:#888}
text{font-size:10px;fill:#333}.legend span{display:inline-block;width:10px;height:10px;margin:0 4px}
.note{color:#555;font-style:italic}
@media print{body{margin:0;max-width:none}h2{break-after:avoid}svg,tr{break-inside:avoid}}
"""
LEGEND_COLOURS = {"before": "#9bb7d4", "after": "#d9822b", "in": "#4a9a5b", "out": "#c0504d"}


def render(report: Report, estimate: Mapping[str, Any] | None = None) -> str:
    """The whole page (with the operator's ``estimate.json`` of the execution, when given)."""
    s = report.summary
    title = f"Placement plan {escape(report.plan_id)}"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{title}</title><style>{STYLE}</style></head><body>",
        f"<h1>{title}</h1>",
        _headline(report),
        *_estimate(estimate),
        *_tiered_note(report),
        "<h2>Summary</h2>",
        _summary_table(report),
        *_charts(report),
        *_tables(report),
        f'<p class="note">{len(s.batches.order or ())} batches of at most '
        f"{s.batches.max_moves_per_broker} moves per broker.</p>",
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


def _headline(r: Report) -> str:
    s = r.summary
    least = (
        "the least any plan must copy is not known (no intents given)"
        if r.lower_bound is None
        else f"the least any plan must copy: {binary_bytes(r.lower_bound)}"
        + ("" if r.ratio is None else f", {(r.ratio - 1) * 100:.1f} % more")
    )
    return (
        f'<p id="headline"><b>Plan</b> {escape(r.plan_id)} &middot; '
        f"<b>{binary_bytes(s.bytes_to_move)}</b> to copy, {count(s.partitions_changed)} partitions changed "
        f"&middot; {least}</p>"
    )


def _tiered_note(r: Report) -> list[str]:
    """What the bytes of partitions of tiered topics mean (none: no note)."""
    partitions, copied = r.tiered
    if not partitions:
        return []
    return [
        f'<p class="note" id="tiered">{partitions} of the partitions changed are of topics with remote '
        f"storage (tiered, KIP-405): their {binary_bytes(copied)} are local bytes, what a new replica copies "
        "from its leader (with KIP-1023's follower.fetch.last.tiered.offset.enable, only those not tiered "
        "yet); their tiered segments stay in the remote storage and are not copied.</p>"
    ]


def _summary_table(r: Report) -> str:
    """The summary in words and units; each cell keeps the summary's key and raw value for machines
    (``data-key``, ``data-value``: the JSON's, as ``plan --summary`` writes it)."""
    s = r.summary
    ratio = r.ratio
    rows: list[tuple[str, str, Any, str]] = [
        ("planId", "Plan id", r.plan_id, r.plan_id),
        ("partitionsChanged", "Partitions moved", s.partitions_changed, count(s.partitions_changed)),
        ("replicaMoves", "Replicas moved to another broker", s.replica_moves, count(s.replica_moves)),
        ("intraBrokerMoves", "Replicas moved between a broker's dirs", s.intra_broker_moves,
         count(s.intra_broker_moves)),
        ("leaderChanges", "Leadership changes", s.leader_changes, count(s.leader_changes)),
        ("networkBytes", "Copied between brokers", s.network_bytes, binary_bytes(s.network_bytes)),
        ("intraBrokerBytes", "Copied between dirs", s.intra_broker_bytes, binary_bytes(s.intra_broker_bytes)),
        ("bytesToMove", "Copied in all", s.bytes_to_move, binary_bytes(s.bytes_to_move)),
        ("lowerBoundBytes", "The least any plan must copy", r.lower_bound,
         "not known (no intents given)" if r.lower_bound is None else binary_bytes(r.lower_bound)),
        ("bytesOverLowerBound", "Copied beyond that least", ratio,
         "n/a" if ratio is None else f"{(ratio - 1) * 100:.1f} %"),
        ("batches", "Batches", s.batches.count, count(s.batches.count)),
    ]  # fmt: skip
    if s.violations_after is not None:
        rows.append(("hardViolationsAfter", "Hard-rule violations left", s.hard_violations_after,
                     count(s.hard_violations_after)))  # fmt: skip
    for when, balance in (("before", s.balance_before), ("after", s.balance_after)):  # named as in JSON
        rows += [
            (f"{k} ({when})", f"{_balance_label(k)}, {when}", v, _balance_value(k, v))
            for k, v in balance.to_json().items()
        ]
    if r.with_intents and s.violations_before is not None and s.violations_after is not None:
        before = s.violations_before.to_json()
        for k, v in s.violations_after.to_json().items():
            key, shown = f"violations {k} (before → after)", f"{before[k]} → {v}"
            rows.append(
                (key, VIOLATION_LABELS.get(k, k), shown, f"{count(before[k])} before, {count(v)} after")
            )
    body = "".join(
        f'<tr><th>{escape(label)}</th><td class="n" data-key="{escape(k)}" data-value="{escape(_plain(v))}">'
        f"{escape(text)}</td></tr>"
        for k, label, v, text in rows
    )
    return f'<table id="summary">{body}</table>'


BALANCE_LABELS = {  # the summary's balance keys for a person (``_balance_value`` says how each reads)
    "brokerBytesMaxMean": "Busiest broker's bytes against the mean",
    "brokerBytesMax": "Bytes on the busiest broker",
    "brokerBytesMean": "Bytes per broker on average",
    "replicasMaxMean": "Most replicas on a broker against the mean",
    "leadersMaxMean": "Most preferred leaderships on a broker against the mean",
    "dirBytesMaxMeanWorstBroker": "Fullest log dir against its broker's mean (the worst broker)",
    "networkInMaxMean": "Busiest broker's network in against the mean",
    "networkOutMaxMean": "Busiest broker's network out against the mean",
    "leaderBytesInMaxMean": "Busiest broker's leaders' bytes in against the mean",
}
VIOLATION_LABELS = {
    "decommissioned": "Replicas on decommissioned brokers",
    "drained": "Replicas on drained log dirs",
    "cordoned": "Replicas newly placed on cordoned log dirs",
    "replicationFactor": "Partitions with another replication factor than their policy's",
    "rackSpread": "Partitions not spread over the rack units as their policy asks",
    "capacity": "Volumes above the disk headroom limit",
}


def _balance_label(key: str) -> str:
    return BALANCE_LABELS.get(key) or re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", key).capitalize()


def _balance_value(key: str, v: object) -> str:
    """Bytes in units, a max/mean as ``1.05x the mean``, nothing known as ``none``."""
    if v is None:
        return "none (nothing to compare)"
    if key in ("brokerBytesMax", "brokerBytesMean") and isinstance(v, int | float):
        return binary_bytes(v)
    if isinstance(v, int | float):
        return f"{v:.2f}x the mean"
    return str(v)


def _estimate(estimate: Mapping[str, Any] | None) -> list[str]:
    """The estimate of the execution's duration (``estimate.json``, execution/copy_model.py), in words."""
    if not estimate:
        return []
    rate = f"{binary_bytes(estimate['bytesPerSecond'])}/s per broker"
    basis = (
        f"{rate} (what the replication throttle lets a copy achieve)"
        if estimate.get("throttled")
        else f"an assumed {rate} (no throttle is set)"
    )
    end = f", ending about {estimate['finishAt']} if started when planned" if estimate.get("finishAt") else ""
    how = "" if estimate.get("exact", True) else " (too large to replay move by move: the bound)"
    per_move = estimate.get("microsecondsPerMove")
    kafka = (
        f", with Kafka's own work at {round(per_move / 1000, 1):g} ms a move"
        f"{'' if estimate.get('perMoveMeasured') else ' (assumed)'}"
        if isinstance(per_move, int)
        else ""
    )
    return [
        f'<p id="estimate"><b>Estimated duration</b> {duration(float(estimate["seconds"]))} at {basis}'
        f"{kafka}{escape(end)}{how}.</p>"
    ]


def _charts(r: Report) -> list[str]:
    out = ["<h2>Load per broker (bytes), before and after</h2>", _note(r.brokers_count, "brokers")]
    lines = [("mean after", float(r.summary.balance_after.broker_bytes_mean), "mean")]
    if r.threshold is not None:
        lines.append(("balance threshold", r.threshold, "line"))
    out.append(
        _bars(
            "chart-brokers",
            [f"{b.broker}" for b in r.brokers],
            [("before", [b.bytes[0] for b in r.brokers]), ("after", [b.bytes[1] for b in r.brokers])],
            lines,
        )
    )
    if r.dirs:
        out += ["<h2>Dirs of the brokers that change (bytes)</h2>", _note(r.dir_brokers_count, "brokers")]
        labels = [f"{d.broker}:{d.path}" for d in r.dirs]
        out.append(
            _bars(
                "chart-dirs",
                labels,
                [("before", [d.bytes[0] for d in r.dirs]), ("after", [d.bytes[1] for d in r.dirs])],
            )
        )
        out += _share_chart(r)
    for level in range(1, r.rack_levels + 1):
        units = [u for u in r.units if u.level == level]
        out += [f"<h2>Replicas per rack unit, level {level}</h2>"]
        out.append(
            _bars(
                f"chart-racks-{level}",
                [u.unit for u in units],
                [("before", [u.replicas[0] for u in units]), ("after", [u.replicas[1] for u in units])],
                fmt=_count,
            )
        )
    if r.units_count.capped:
        out.append(_note(r.units_count, "rack units"))
    moving = [b for b in r.brokers if b.bytes_in or b.bytes_out]
    out += ["<h2>Bytes moved per broker, in and out</h2>"]
    out.append(
        _bars(
            "chart-flows",
            [str(b.broker) for b in moving],
            [("in", [b.bytes_in for b in moving]), ("out", [b.bytes_out for b in moving])],
        )
    )
    out += [
        "<h2>Batches in execution order (bytes per batch, line: cumulative)</h2>",
        _batches(r.batch_bytes),
    ]
    return out


def _tables(r: Report) -> list[str]:
    out = ["<h2>Brokers</h2>", _note(r.brokers_count, "brokers")]
    out.append(
        _table(
            "brokers",
            [
                "broker",
                "rack",
                "bytes before",
                "bytes after",
                "replicas",
                "leaders",
                "in",
                "out",
                "between dirs",
            ],
            [
                [
                    b.broker,
                    b.rack or "",
                    Bytes(b.bytes[0]),
                    Bytes(b.bytes[1]),
                    _pair(b.replicas),
                    _pair(b.leaders),
                    Bytes(b.bytes_in),
                    Bytes(b.bytes_out),
                    Bytes(b.dir_bytes),
                ]
                for b in r.brokers
            ],
        )
    )
    traffic = r.summary.traffic
    if traffic is not None and traffic.brokers and traffic.partitions_with_rate:
        shown, total = len(traffic.brokers), traffic.broker_count
        out += [
            "<h2>Traffic per broker, before and after</h2>",
            f"<p>{shown} of {total} brokers (the busiest after the plan); network capacity goal: "
            f"{escape(traffic.capacity_goal)}; partitions without a rate: "
            f"{traffic.partitions_without_rate}.</p>",
        ]
        rows = [
            [
                t.id,
                _rate_pair(t.network_in),
                _rate_pair(t.network_out),
                _rate_pair(t.leader_bytes_in),
                _rate(t.network_in_limit),
                _rate(t.network_out_limit),
            ]
            for t in traffic.brokers
        ]
        head = ["broker", "network in", "network out", "leaders' bytes in", "in limit", "out limit"]
        out.append(_table("traffic", head, rows))
    if r.dirs:
        out += ["<h2>Dirs</h2>", _note(r.dir_brokers_count, "brokers")]
        limit = r.summary.disk_headroom.max_disk_share
        note = f"disk headroom: no dir is planned above {100 * limit:.1f}% of its volume"
        out.append(f'<p class="note">{escape(note)}</p>')
        rows = [
            [
                d.broker,
                d.path,
                Bytes(d.bytes[0]),
                Bytes(d.bytes[1]),
                Bytes(d.usable_bytes) if d.usable_bytes else "",
                _percent(d.share[0]) if d.share else "unknown size: no limit",
                _percent(d.share[1]) if d.share else "",
                "yes" if d.cordoned else "",
            ]
            for d in r.dirs
        ]
        head = ["broker", "dir", "bytes before", "bytes after", "usable", "share before", "share after"]
        out.append(_table("dirs", [*head, "cordoned"], rows))
    if r.units:
        out += ["<h2>Rack units</h2>", _note(r.units_count, "rack units")]
        rows = [[u.level, u.unit, u.replicas[0], u.replicas[1]] for u in r.units]
        out.append(_table("units", ["level", "unit", "replicas before", "replicas after"], rows))
    out += ["<h2>Moves by topic</h2>", _note(r.topics_count, "topics, those moving the most bytes")]
    rows = [[t.topic, t.partitions, t.replica_moves, Bytes(t.bytes)] for t in r.topics]
    out.append(_table("topics", ["topic", "partitions", "replica moves", "bytes"], rows))
    out += ["<h2>Largest moves</h2>", _note(r.moves_count, "partitions that change")]
    rows = [
        [m.partition, Bytes(m.size_bytes), _ids(m.replicas[0]), _ids(m.replicas[1]), Bytes(m.bytes)]
        for m in r.moves
    ]
    out.append(_table("moves", ["partition", "size", "replicas before", "after", "bytes copied"], rows))
    return out


def _share_chart(r: Report) -> list[str]:
    """Each charted dir's share of its volume before and after, with the disk headroom limit's line
    (nothing when no charted dir's volume size is known)."""
    known = [d for d in r.dirs if d.share is not None]
    if not known:
        return []
    limit = 100 * r.summary.disk_headroom.max_disk_share
    return [
        "<h2>Dirs of the brokers that change (share of their volume)</h2>",
        _bars(
            "chart-dir-shares",
            [f"{d.broker}:{d.path}" for d in known],
            [
                ("before", [100 * d.share[0] for d in known if d.share]),
                ("after", [100 * d.share[1] for d in known if d.share]),
            ],
            [("maxDiskShare", limit, "line")],
            fmt=lambda v: f"{v:.0f}%",
        ),
    ]


def _percent(share: float) -> str:
    return f"{100 * share:.1f}%"


class Bytes(int):
    """A table cell of bytes: shown in binary units, the exact number kept in ``data-value``."""


def _cell(v: object) -> str:
    if isinstance(v, Bytes):
        return f'<td class="n" data-value="{int(v)}">{binary_bytes(v)}</td>'
    if isinstance(v, int):
        return f'<td class="n">{v}</td>'  # (ids and small counts)
    return f"<td>{escape(str(v))}</td>"


def _table(ident: str, head: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    th = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(_cell(v) for v in row) + "</tr>" for row in rows)
    return f'<table id="{ident}"><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>'


def _bars(
    ident: str,
    labels: Sequence[str],
    series: Sequence[tuple[str, Sequence[float]]],
    lines: Sequence[tuple[str, float, str]] = (),
    fmt: Callable[[float], str] | None = None,
) -> str:
    """Grouped bars, one group per label (a ``<g class="group">`` with a tooltip), with reference lines;
    ``fmt`` writes the axis values (default: bytes)."""
    fmt = fmt or binary_bytes
    if not labels:
        return '<p class="note">nothing to chart</p>'
    top = max([max(v, default=0) for _, v in series] + [v for _, v, _ in lines] + [1])
    inner_w, inner_h = WIDTH - PAD - 8, HEIGHT - PAD
    group_w = inner_w / len(labels)
    bar_w = max(0.5, group_w * 0.8 / len(series))
    shown = [_shorten(label) for label in labels]
    longest = max(len(label) for label in shown) * CHAR_W
    # a label is written across its group when it fits there, else upright (bottom to top) below
    # the axis, the chart growing to hold it; too many groups for a line of text each: no labels
    show_labels = group_w >= LINE_H * 1.25
    upright = show_labels and longest > group_w * 0.9
    height = HEIGHT + (16 + longest if upright else 30)
    parts = [f'<svg id="{ident}" viewBox="0 0 {WIDTH} {height:.0f}" role="img">']
    parts.append(f'<line class="axis" x1="{PAD}" y1="{inner_h + 8}" x2="{WIDTH - 8}" y2="{inner_h + 8}"/>')
    parts.append(f'<text x="2" y="14">{escape(fmt(top))}</text>')
    for i, label in enumerate(labels):
        x0 = PAD + i * group_w + group_w * 0.1
        tip = "; ".join(f"{name} {_plain(v[i])}" for name, v in series)
        rects = []
        for j, (name, values) in enumerate(series):
            h = values[i] / top * inner_h
            rects.append(
                f'<rect class="{name}" x="{x0 + j * bar_w:.1f}" y="{inner_h + 8 - h:.1f}" '
                f'width="{bar_w:.1f}" height="{h:.1f}"/>'
            )
        cx = x0 + group_w * 0.4
        if not show_labels:
            text = ""
        elif upright:  # rotated about its anchor: text-anchor end puts the label's end at the axis
            text = (
                f'<text x="{cx:.1f}" y="{inner_h + 12}" text-anchor="end" dominant-baseline="central" '
                f'transform="rotate(-90 {cx:.1f} {inner_h + 12})">{escape(shown[i])}</text>'
            )
        else:
            text = f'<text x="{cx:.1f}" y="{inner_h + 20}" text-anchor="middle">{escape(shown[i])}</text>'
        parts.append(
            f'<g class="group"><title>{escape(label)}: {escape(tip)}</title>{"".join(rects)}{text}</g>'
        )
    taken: list[float] = []  # baselines of the reference lines' labels so far, from the top line down
    for name, value, css in sorted(lines, key=lambda line: -line[1]):
        y = inner_h + 8 - value / top * inner_h
        parts.append(f'<line class="{css}" x1="{PAD}" y1="{y:.1f}" x2="{WIDTH - 8}" y2="{y:.1f}"/>')
        ty = y - 3  # above its line, or below it when the label of a line just above is there
        while ty < LINE_H or any(abs(ty - t) < LINE_H for t in taken):  # nor cut off at the top
            ty = y + LINE_H - 1 if ty < y else ty + LINE_H
        taken.append(ty)
        parts.append(
            f'<text x="{WIDTH - 8}" y="{ty:.1f}" text-anchor="end">{escape(name)} {fmt(value)}</text>'
        )
    parts.append("</svg>")
    legend = "".join(
        f'<span style="background:{LEGEND_COLOURS.get(name, "#6b7fbf")}"></span>{escape(name)} '
        for name, _ in series
    )
    return "".join(parts) + f'<div class="legend">{legend}</div>'


def _shorten(label: str) -> str:
    """At most ``MAX_LABEL`` characters, keeping both ends: dir labels (``broker:path``) differ in
    their last characters (``/data-0``, ``/data-1``)."""
    if len(label) <= MAX_LABEL:
        return label
    head = 4
    return f"{label[:head]}…{label[head + 1 - MAX_LABEL :]}"


def _batches(sizes: Sequence[int]) -> str:
    """Bytes per batch (grouped into at most ``MAX_BATCH_BARS`` bars) and their running total."""
    if not sizes:
        return '<p class="note">no batches</p>'
    per = -(-len(sizes) // MAX_BATCH_BARS)
    groups = [sum(sizes[i : i + per]) for i in range(0, len(sizes), per)]
    labels = [
        f"{i * per + 1}" if per == 1 else f"{i * per + 1}-{min(len(sizes), (i + 1) * per)}"
        for i in range(len(groups))
    ]
    chart = _bars("chart-batches", labels, [("bytes", groups)])
    total, running, points = max(1, sum(groups)), 0, []
    inner_w, inner_h = WIDTH - PAD - 8, HEIGHT - PAD
    for i, g in enumerate(groups):
        running += g
        points.append(
            f"{PAD + (i + 1) * inner_w / len(groups):.1f},{inner_h + 8 - running / total * inner_h:.1f}"
        )
    line = f'<polyline class="cum" points="{PAD},{inner_h + 8} {" ".join(points)}"/>'
    note = "" if per == 1 else f'<p class="note">{len(sizes)} batches, charted in groups of {per}.</p>'
    return note + chart.replace("</svg>", line + "</svg>", 1)


def _note(c: Capped, what: str) -> str:
    return f'<p class="note">Showing {c.shown} of {c.total} {escape(what)}.</p>' if c.capped else ""


def _plain(v: object) -> str:
    return "n/a" if v is None else str(v)


def _pair(v: tuple[int, int]) -> str:
    return f"{v[0]} → {v[1]}"


def _rate(v: float | None) -> str:
    return "" if v is None else f"{v / 1e6:.2f} MB/s"


def _rate_pair(v: Sequence[float]) -> str:
    return f"{_rate(v[0])} → {_rate(v[1])}"


def _ids(v: tuple[int, ...]) -> str:
    return ",".join(map(str, v))


def _count(n: float) -> str:
    return f"{n:.0f}"
