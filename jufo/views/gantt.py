"""Gantt chart of a predicted file: time across; nodes, or one row per job, down.

Every job is one shape (an SVG ``<g>`` holding one path of rectangles: one per run of
adjacent nodes with the same cores) with a tooltip naming id, user, queue, size, start, end
and why it starts then. Running jobs are hatched, top dogs outlined, backfilled jobs dashed,
reservations grey; a labelled red line marks ``system_time``. Rows are nodes (by name, cores
as bands inside a node) while a node row stays a few pixels high; past that, or without a
placement (AttributeState), one row per job, grouped by queue and sorted by start, and the
title says so. SVG needs nothing; HTML adds zoom and pan on the time axis, a filter and a
user highlight, self-contained (no network); PNG needs matplotlib (``jufo[plot]``).
"""

from __future__ import annotations

import colorsys
import time
import zlib
from dataclasses import dataclass, field
from datetime import datetime, timezone
from html import escape
from importlib import resources

from ..io.dates import format_date
from ..io.errors import InputError, Report
from ..io.lml import Document
from ..engine.node import Machine, read_nodes
from ..io.hostlist import compress_hostlist
from ..engine.ranges import ranges_of
from .show import Bar, bars, duration, now_of

WIDTH, TOP, BOTTOM, RIGHT = 1200, 96, 56, 24  # plot width and margins in pixels
LEFT = {"nodes": 110, "jobs": 190}  # room for node names, or queue and job ids
PLOT_HEIGHT = 1200  # pixels a node chart may take; beyond it node rows get thinner
PNG_PLOT_HEIGHT = 1400  # a picture is not scrolled: every row fits in this
MIN_ROW_PX = 3  # thinner node rows cannot be hovered or told apart: one row per job instead
MAX_ROW_PX = 14
LABEL_PX = 11  # a row label needs this much height
PNG_LABEL_PX = 16  # in a picture, fewer: each costs matplotlib a text layout
DATE = "%Y-%m-%d %H:%M:%S"
KIND_COLOURS = {"running": "#6b7b8c", "topdog": "#1f5fbf", "backfilled": "#2ca02c", "predicted": "#f28e1c",
                "reservation": "#c4c4c4"}  # where rows are too thin to tell jobs apart
KINDS = {  # kind -> legend text, in legend order
    "running": "running (hatched)",
    "topdog": "top dog: reserved (outlined)",
    "backfilled": "backfilled (dashed outline)",
    "predicted": "predicted start",
    "reservation": "reservation",
}


@dataclass
class Shape:
    """One job or reservation: its rows (``(first, last + 1)`` in row units, fractions for
    cores inside a node) over ``[start, end)``."""

    key: str
    kind: str  # one of KINDS
    start: int
    end: int
    spans: list[tuple[float, float]]
    user: str
    queue: str
    tip: str
    colour: str


@dataclass
class Chart:
    shapes: list[Shape]
    rows: int
    labels: list[tuple[int, str]]  # row, name (node or job id)
    groups: list[tuple[int, int, str]]  # first row, end row, queue (jobs view)
    by: str  # nodes or jobs
    t0: int
    t1: int
    now: int
    title: str
    note: str  # what the view shows and leaves out, under the title
    zone: str  # the time zone the dates are read in, e.g. "CEST, UTC+02:00"
    users: list[str] = field(default_factory=list)

    def row_px(self, height: float = PLOT_HEIGHT, hoverable: bool = True) -> float:
        """Height of a row in pixels: at most MAX_ROW_PX; node rows share ``height``, and so
        do job rows, but where they are hovered (SVG, HTML) never thinner than MIN_ROW_PX."""
        if self.by == "nodes" or not hoverable:
            return min(MAX_ROW_PX, height / self.rows)
        return min(MAX_ROW_PX, max(MIN_ROW_PX, height / self.rows))


def colour(key: str) -> str:
    """A stable colour per job, as #rrggbb (understood by every SVG viewer).

    >>> colour("j1") == colour("j1"), len(colour("j1"))
    (True, 7)
    """
    r, g, b = colorsys.hls_to_rgb((zlib.crc32(key.encode()) % 360) / 360, 0.55, 0.65)
    return f"#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}"


def zone_namer(tz: str):
    """A function naming the time zone of a snapshot date (``"CEST, UTC+02:00"``).

    Snapshots carry no zone: their dates are the machine's wall clock. ``tz`` says which
    zone that clock is in: ``local`` (this computer's, as on a login node), ``UTC``, or an
    IANA name such as ``Europe/Berlin``; InputError (exit 2) for an unknown name.

    >>> zone_namer("UTC")(0)
    'UTC'
    """
    if tz.upper() in ("UTC", "GMT", "Z"):
        return lambda t: "UTC"
    if tz == "local":
        def local(t: int) -> str:
            real = time.mktime(time.gmtime(t)[:8] + (-1,))  # the wall-clock time read as local
            when = time.localtime(real)
            return _zone_text(when.tm_zone, when.tm_gmtoff)
        return local
    try:
        from zoneinfo import ZoneInfo

        zone = ZoneInfo(tz)
    except (ValueError, OSError, ImportError) as err:  # ZoneInfoNotFoundError is a KeyError
        raise InputError("gantt", "--tz", tz, f"not a time zone ({err}); use local, UTC or e.g. Europe/Berlin") from None
    except KeyError:
        raise InputError("gantt", "--tz", tz, "not a time zone known here; use local, UTC or e.g. Europe/Berlin") from None

    def named(t: int) -> str:
        when = datetime.fromtimestamp(t, timezone.utc).replace(tzinfo=zone)
        offset = when.utcoffset()
        return _zone_text(when.tzname() or tz, int(offset.total_seconds()) if offset else 0)
    return named


def _zone_text(name: str, offset: int) -> str:
    if offset == 0 and name in ("UTC", "GMT"):
        return "UTC"
    sign = "+" if offset >= 0 else "-"
    return f"{name}, UTC{sign}{abs(offset) // 3600:02d}:{abs(offset) % 3600 // 60:02d}"


def layout(doc: Document, title: str = "", by: str = "auto", tz: str = "local") -> Chart:
    """Place every job and reservation of a predicted file (``by``: auto, nodes or jobs);
    ValueError if the file has no system_time or no prediction."""
    now, _ = now_of(doc)
    everything = bars(doc)
    if not any(b.predicted for b in everything):
        raise ValueError("no job has a prediction (jufo_starttime or jufo_reason)")
    drawn = [b for b in everything if b.start is not None and b.end is not None]
    unstartable = sum(1 for b in everything if not b.running and b.start is None and b.predicted)
    quiet = Report(collect=True)  # the chart draws what can be read; predict reports the rest
    machine = read_nodes(doc.of_type("node"), quiet)
    reservations = _reservations(doc, machine, quiet)
    end = max([b.end for b in drawn] + [r[2] for r in reservations] + [now + 60])
    t0 = now - max(60, (end - now) // 10)
    placed = bool(machine.nodes) and any(b.groups for b in drawn)
    rows_fit = len(machine.nodes) * MIN_ROW_PX <= PLOT_HEIGHT
    if by == "nodes" and not placed:
        raise InputError("gantt", "--by", by, "the file places no job on nodes (AttributeState counts cores "
                         "only); use --by jobs")
    view = by if by != "auto" else "nodes" if placed and rows_fit else "jobs"
    if view == "nodes":
        chart = _by_nodes(drawn, reservations, machine, t0, end, now)
        chart.note = f"one row per node ({len(machine.nodes):,}); cores of shared nodes as bands"
    else:
        chart = _by_jobs(drawn, reservations, t0, end, now)
        why = (f"{len(machine.nodes):,} node rows would be {PLOT_HEIGHT / len(machine.nodes):.1f} px each"
               if placed and by == "auto" else "no placement on nodes in the file" if not placed else "--by jobs")
        chart.note = f"one row per job, grouped by queue, sorted by start ({why})"
    if unstartable:
        chart.note += f"; {unstartable:,} waiting job{'s' if unstartable != 1 else ''} cannot start (jufo show)"
    chart.title = title
    chart.zone = zone_namer(tz)(now)
    chart.users = sorted({s.user for s in chart.shapes if s.user})
    return chart


def _reservations(doc: Document, machine: Machine, quiet: Report) -> list[tuple[str, int, int, list[int], int]]:
    """(id, start, end, node indices, cores) of the file's reservations, read as the forecast reads them."""
    from ..engine.ranges import bits_of
    from ..engine.reservation import read_reservations

    out = []
    for res in read_reservations(doc.of_type("reservation"), machine, 0, quiet):  # epoch 0: absolute times
        if isinstance(res.resources, int):
            out.append((res.id, res.start, res.end, [], res.resources))
        else:
            nodes = list(bits_of(res.resources.node_mask()))
            out.append((res.id, res.start, res.end, nodes, sum(machine.nodes[n].ncores for n in nodes)))
    return out


def _kind(b: Bar) -> str:
    return "running" if b.running else "topdog" if b.topdog else "backfilled" if b.backfilled else "predicted"


def _tip(b: Bar, hosts: str) -> str:
    why = {"running": "running", "topdog": "top dog: its start is reserved",
           "backfilled": "backfilled: starts early without delaying a reservation",
           "predicted": "starts when its turn comes"}[_kind(b)]
    size = f"{b.nodes:,} node{'s' if b.nodes != 1 else ''}, {b.cores:,} cores"
    lines = [f"{b.name}" + (f" ({b.jobname})" if b.jobname and b.jobname != b.name else ""),
             f"user {b.owner or '?'} · queue {b.queue or '?'} · {size}" + (f" · {hosts}" if hosts else ""),
             f"{format_date(b.start, DATE)} – {format_date(b.end, DATE)} ({duration(b.end - b.start)})", why]
    if b.tasks:  # an array record: drawn over all its tasks' nodes, from the first start to the last end
        lines.append("array tasks start: " + _cut(b.tasks.replace(";", ", "), 120))
    return "\n".join(lines)


def _by_nodes(drawn: list[Bar], reservations, machine: Machine, t0: int, end: int, now: int) -> Chart:
    ncores = [n.ncores for n in machine.nodes]
    names = [n.name for n in machine.nodes]
    shapes = []
    for rid, start, stop, nodes, cores in reservations:
        spans = [(float(lo), float(hi + 1)) for lo, hi in _runs(nodes)]
        if spans:
            tip = (f"reservation {rid}\n{compress_hostlist([names[n] for n in nodes])} ({len(nodes):,} nodes)\n"
                   f"{format_date(start, DATE)} – {format_date(stop, DATE)}")
            shapes.append(Shape(rid, "reservation", max(start, t0), stop, spans, "", "", tip, "#999999"))
    for b in drawn:
        bands: dict[tuple[int, int] | None, list[int]] = {}  # core range (None: whole node) -> nodes
        for lo, hi, cores in b.groups:
            for n in range(lo, min(hi, len(ncores) - 1) + 1):
                for c in (cores or [None]):
                    whole = c is None or (c[0] == 0 and c[1] >= ncores[n] - 1)
                    bands.setdefault(None if whole else c, []).append(n)
        spans = []
        for band, nodes in bands.items():
            for lo, hi in _runs(nodes):
                if band is None:
                    spans.append((float(lo), float(hi + 1)))
                else:  # a band of a shared node, node by node (another job may hold the rest)
                    spans.extend((n + band[0] / ncores[n], n + (band[1] + 1) / ncores[n]) for n in range(lo, hi + 1))
        hosts = compress_hostlist([names[n] for n in sorted({n for ns in bands.values() for n in ns})])
        shapes.append(Shape(b.id, _kind(b), max(b.start, t0), b.end, sorted(spans), b.owner, b.queue,
                            _tip(b, _cut(hosts)), colour(b.id)))
    return Chart(shapes, max(len(ncores), 1), list(enumerate(names)), [], "nodes", t0, end, now, "", "", "")


def _cut(hosts: str, width: int = 60) -> str:
    return hosts if len(hosts) <= width else hosts[:width - 3] + "..."


def _runs(numbers: list[int]) -> list[tuple[int, int]]:
    """Runs of consecutive node numbers (``ranges_of`` over their mask).

    >>> _runs([5, 1, 2, 3, 7, 8])
    [(1, 3), (5, 5), (7, 8)]
    """
    mask = 0
    for n in numbers:
        mask |= 1 << n
    return ranges_of(mask)


def _by_jobs(drawn: list[Bar], reservations, t0: int, end: int, now: int) -> Chart:
    shapes, labels, groups = [], [], []
    row = 0
    if reservations:
        for rid, start, stop, nodes, cores in sorted(reservations, key=lambda r: (r[1], r[0])):
            tip = f"reservation {rid}\n{cores:,} cores\n{format_date(start, DATE)} – {format_date(stop, DATE)}"
            shapes.append(Shape(rid, "reservation", max(start, t0), stop, [(row, row + 1)], "", "", tip, "#999999"))
            labels.append((row, rid))
            row += 1
        groups.append((0, row, "reservations"))
    by_queue: dict[str, list[Bar]] = {}
    for b in drawn:
        by_queue.setdefault(b.queue, []).append(b)
    for queue in sorted(by_queue):
        first = row
        for b in sorted(by_queue[queue], key=lambda j: (not j.running, j.start, j.end, j.id)):
            shapes.append(Shape(b.id, _kind(b), max(b.start, t0), b.end, [(row, row + 1)], b.owner, b.queue,
                                _tip(b, _cut(compress_hostlist(b.hosts)) if b.hosts else ""), colour(b.id)))
            labels.append((row, b.name))
            row += 1
        groups.append((first, row, queue or "(no queue)"))
    return Chart(shapes, max(row, 1), labels, groups, "jobs", t0, end, now, "", "", "")


STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400,
         172800, 604800, 1209600, 2592000)


def ticks(t0: int, t1: int, count: int = 8) -> list[int]:
    """Round times between ``t0`` and ``t1``, about ``count`` of them (the HTML view's script
    does the same on zoom).

    >>> ticks(0, 86400, 4)
    [21600, 43200, 64800]
    """
    want = max(1, (t1 - t0) // count)
    step = next((s for s in STEPS if s >= want), STEPS[-1])
    first = (t0 // step + 1) * step
    return list(range(first, t1, step))


def _num(v: float) -> str:
    """Coordinates with one decimal, without a trailing ``.0``."""
    text = f"{v:.1f}"
    return text[:-2] if text.endswith(".0") else text


class _Frame:
    """Pixel positions of a chart."""

    def __init__(self, chart: Chart, height: float = PLOT_HEIGHT, hoverable: bool = True) -> None:
        self.chart = chart
        self.left = LEFT[chart.by]
        self.row = chart.row_px(height, hoverable)
        self.thin = self.row < 4  # too thin for outlines and per-job colours: coloured by kind
        self.height = max(120.0, chart.rows * self.row)
        self.span = max(1, chart.t1 - chart.t0)

    def x(self, t: float) -> float:
        return self.left + (t - self.chart.t0) * WIDTH / self.span

    def y(self, row: float) -> float:
        return TOP + row * self.row

    @property
    def total_width(self) -> int:
        return self.left + WIDTH + RIGHT

    @property
    def total_height(self) -> int:
        return int(TOP + self.height + BOTTOM)


STYLE = """
.f{stroke-width:0}.running .f{fill-opacity:.5}.running .h{fill:url(#hatch);pointer-events:none}
.topdog .f{stroke:#111;stroke-width:1.6}.backfilled .f{stroke:#111;stroke-width:1;stroke-dasharray:3 2}
.reservation .f{fill:#999;fill-opacity:.55}.f{vector-effect:non-scaling-stroke}
.dim{opacity:.12}.hl .f{stroke:#000;stroke-width:2.5}.hide{display:none}
text{font-family:sans-serif;font-size:11px}.t{font-size:15px;font-weight:bold}.n{fill:#555}
"""


def svg(chart: Chart) -> str:
    """The chart as a standalone SVG document (ids ``plot``, ``xaxis``, ``now`` for the HTML
    view's script; ``data-t0``/``data-t1`` on the root give the time axis)."""
    f = _Frame(chart)
    c = chart
    thin = f.thin
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" id="chart" width="{f.total_width}" height="{f.total_height}" '
        f'viewBox="0 0 {f.total_width} {f.total_height}" data-t0="{c.t0}" data-t1="{c.t1}" data-left="{f.left}" '
        f'data-width="{WIDTH}" data-now="{c.now}" data-base="{_num(TOP + f.height)}">',
        f"<style>{STYLE.strip()}{'.topdog .f,.backfilled .f{stroke-width:0}' if thin else ''}</style>",
        '<defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" '
        'patternTransform="rotate(45)"><line x1="0" y1="0" x2="0" y2="6" stroke="#000" stroke-opacity=".4" '
        'stroke-width="2"/></pattern>'
        f'<clipPath id="clip"><rect x="{f.left}" y="{TOP}" width="{WIDTH}" height="{_num(f.height)}"/></clipPath></defs>',
        f'<text class="t" x="{f.left}" y="20">{escape(c.title)}</text>',
        f'<text class="n" x="{f.left}" y="38">{escape(c.note)}</text>',
        *_legend_svg(f.left, 50, thin),
        f'<rect x="{f.left}" y="{TOP}" width="{WIDTH}" height="{_num(f.height)}" fill="#fafafa" stroke="#ccc"/>',
    ]
    out.extend(_row_labels_svg(f))
    out.append('<g clip-path="url(#clip)"><g id="plot">')
    for s in c.shapes:
        out.append(_shape_svg(s, f, KIND_COLOURS[s.kind] if thin else s.colour))
    x_now = _num(f.x(c.now))
    out.append(f'<line id="now" x1="{x_now}" y1="{TOP - 4}" x2="{x_now}" y2="{_num(TOP + f.height)}" stroke="red" '
               f'stroke-width="1.5" stroke-dasharray="5 3" vector-effect="non-scaling-stroke"/>')
    out.append("</g></g>")
    out.append(f'<text id="nowlabel" x="{x_now}" y="{TOP - 8}" fill="red" text-anchor="middle">'
               f'now {format_date(c.now, DATE)}</text>')
    out.append('<g id="xaxis">')
    out.extend(_tick_svg(t, f) for t in ticks(c.t0, c.t1))
    out.append("</g>")
    out.append(f'<text class="n" x="{f.left + WIDTH}" y="{f.total_height - 6}" text-anchor="end">'
               f'time ({escape(c.zone)}; dates as the snapshot gives them)</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _shape_svg(s: Shape, f: _Frame, fill_colour: str) -> str:
    x0, x1 = f.x(s.start), f.x(s.end)
    w = _num(max(x1 - x0, 0.5))
    d = "".join(f"M{_num(x0)} {_num(f.y(a))}h{w}v{_num(max((b - a) * f.row, 0.5))}h-{w}z" for a, b in s.spans)
    hatch = f'<path class="h" d="{d}"/>' if s.kind == "running" else ""
    fill = "" if s.kind == "reservation" else f' fill="{fill_colour}"'
    return (f'<g class="{s.kind}" data-id="{escape(s.key)}" data-user="{escape(s.user)}" '
            f'data-queue="{escape(s.queue)}"><title>{escape(s.tip)}</title><path class="f" d="{d}"{fill}/>{hatch}</g>')


def _legend_svg(x: int, y: int, thin: bool) -> list[str]:
    out = []
    for kind, text in _legend_texts(thin).items():
        fill = KIND_COLOURS[kind] if thin or kind == "reservation" else "#5b8fd9"
        out.append(f'<g class="{kind}"><path class="f" d="M{x} {y}h18v12h-18z" fill="{fill}"/>'
                   + (f'<path class="h" d="M{x} {y}h18v12h-18z"/>' if kind == "running" else "")
                   + f'<text x="{x + 24}" y="{y + 10}">{escape(text)}</text></g>')
        x += 34 + 6 * len(text)
    out.append(f'<line x1="{x}" y1="{y - 2}" x2="{x}" y2="{y + 14}" stroke="red" stroke-width="1.5" '
               f'stroke-dasharray="5 3"/><text x="{x + 6}" y="{y + 10}">now (system_time)</text>')
    return out


def _legend_texts(thin: bool) -> dict[str, str]:
    """Legend entries: styles name the kinds, or, in thin rows, colours do."""
    if not thin:
        return KINDS
    return {kind: text.split(" (")[0] for kind, text in KINDS.items()}


def _row_labels_svg(f: _Frame) -> list[str]:
    c = f.chart
    every = max(1, -(-LABEL_PX // max(f.row, 0.01)))
    out = []
    for row, name in c.labels:
        if row % every == 0:
            out.append(f'<text x="{f.left - 6}" y="{_num(f.y(row + 0.5) + 4)}" text-anchor="end">{escape(name)}</text>')
    for first, end, queue in c.groups:
        y0, y1 = f.y(first), f.y(end)
        out.append(f'<line x1="{f.left - 120}" y1="{_num(y0)}" x2="{f.left + WIDTH}" y2="{_num(y0)}" stroke="#888"/>')
        mid = (y0 + y1) / 2
        label = f"{queue} ({end - first:,})"
        if y1 - y0 >= 6 * len(label):
            out.append(f'<text x="{f.left - 110}" y="{_num(mid)}" transform="rotate(-90 {f.left - 110} {_num(mid)})" '
                       f'text-anchor="middle" font-weight="bold">{escape(label)}</text>')
        else:
            out.append(f'<text x="{f.left - 180}" y="{_num(y0 + 10)}" font-weight="bold">{escape(label)}</text>')
    if c.by == "nodes":
        out.append(f'<text x="14" y="{_num(TOP + f.height / 2)}" transform="rotate(-90 14 {_num(TOP + f.height / 2)})" '
                   f'text-anchor="middle">nodes</text>')
    return out


def _tick_svg(t: int, f: _Frame) -> str:
    x = _num(f.x(t))
    base = TOP + f.height
    return (f'<g><line x1="{x}" y1="{_num(base)}" x2="{x}" y2="{_num(base + 5)}" stroke="#333"/>'
            f'<text x="{x}" y="{_num(base + 18)}" text-anchor="middle">{format_date(t, "%H:%M" if t % 60 == 0 else "%H:%M:%S")}'
            f'</text><text x="{x}" y="{_num(base + 31)}" text-anchor="middle" class="n">{format_date(t, "%Y-%m-%d")}'
            f"</text></g>")


def html(chart: Chart) -> str:
    """The SVG in a page that works offline: wheel or buttons zoom the time axis, dragging
    pans, a filter hides other jobs, a user's jobs can be highlighted."""
    script = resources.files("jufo.views").joinpath("gantt.js").read_text(encoding="utf-8")
    users = "".join(f'<option value="{escape(u)}">{escape(u)}</option>' for u in chart.users)
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{escape(chart.title)}</title>\n<style>body{{font-family:sans-serif;margin:8px}}"
        "#controls{position:sticky;top:0;background:#fff;padding:6px 0;border-bottom:1px solid #ddd;z-index:1}"
        "#controls input{width:18em}#chart{cursor:grab}</style></head>\n<body>\n"
        '<div id="controls"><label>Filter <input id="filter" type="search" '
        'placeholder="user, queue or job id (space: any of them)"></label> '
        f'<label>Highlight user <select id="highlight"><option value="">(none)</option>{users}</select></label> '
        '<button id="zoomin" title="zoom in (or mouse wheel)">+</button> <button id="zoomout">&#8722;</button> '
        '<button id="reset">reset</button> <span id="count"></span> '
        '<span class="n" style="color:#555">wheel: zoom time · drag: pan · hover: details</span></div>\n'
        f"{svg(chart)}"
        f"<script>\n{script}</script>\n</body></html>\n"
    )


def png(chart: Chart) -> bytes:
    """The same shapes drawn with matplotlib (an optional extra), legend included."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import io

        import matplotlib.pyplot as plt
        from matplotlib.collections import PolyCollection
        from matplotlib.lines import Line2D
        from matplotlib.patches import Patch
    except ImportError:
        raise InputError("gantt", "output", ".png", "PNG needs matplotlib: .venv/bin/pip install -e '.[plot]' in jufo's folder "
                         "(or write .svg or .html)") from None
    f = _Frame(chart, PNG_PLOT_HEIGHT, hoverable=False)
    width, height = f.total_width + 40, f.total_height + 40  # pixels; margins fixed: no second draw to fit
    fig = plt.figure(figsize=(width / 100, height / 100), dpi=100)
    ax = fig.add_axes((f.left / width, (BOTTOM + 40) / height, WIDTH / width, f.height / height))
    thin = f.thin
    style = {
        "reservation": dict(alpha=0.55, linewidths=0),
        "running": dict(alpha=0.5, hatch=None if thin else "///", edgecolor="#555", linewidths=0),
        "predicted": dict(linewidths=0),
        "backfilled": dict(edgecolor="#111", linewidths=0 if thin else 1, linestyles="--"),
        "topdog": dict(edgecolor="#111", linewidths=0 if thin else 1.6),
    }
    for kind in style:
        polys, faces = [], []
        for s in chart.shapes:
            if s.kind != kind:
                continue
            for a, b in s.spans:
                polys.append([(s.start, a), (s.end, a), (s.end, b), (s.start, b)])
                faces.append(KIND_COLOURS[kind] if thin else s.colour)
        if polys:
            ax.add_collection(PolyCollection(polys, facecolors=faces, **style[kind]))
    _png_labels(ax, chart, f)
    ax.axvline(chart.now, color="red", linestyle="--", linewidth=1.2)
    ax.annotate(f" now {format_date(chart.now, DATE)}", (chart.now, 0), xytext=(2, -2), textcoords="offset points",
                ha="left", va="top", color="red", fontsize=8, backgroundcolor="#ffffffc0")
    ax.set_xlim(chart.t0, chart.t1)
    ax.set_ylim(chart.rows, 0)
    positions = ticks(chart.t0, chart.t1)
    ax.set_xticks(positions, [format_date(t, "%H:%M\n%Y-%m-%d") for t in positions], fontsize=8)
    every = max(1, -(-PNG_LABEL_PX // max(f.row, 0.01)))
    shown = [(row, name) for row, name in chart.labels if row % every == 0]
    ax.set_yticks([row + 0.5 for row, _ in shown], [name for _, name in shown], fontsize=7)
    for first, _, _ in chart.groups:
        ax.axhline(first, color="#888", linewidth=0.6)
    ax.set_xlabel(f"time ({chart.zone}; dates as the snapshot gives them)", fontsize=8)
    ax.set_ylabel("nodes" if chart.by == "nodes" else "jobs by queue: " + ", ".join(
        f"{q} ({e - a:,})" for a, e, q in chart.groups), fontsize=8)
    ax.set_title(f"{chart.title}\n{chart.note}", fontsize=10, loc="left")
    handles = [Patch(facecolor=KIND_COLOURS[k] if thin or k == "reservation" else "#5b8fd9", label=text,
                     alpha=0.55 if k in ("running", "reservation") else 1,
                     hatch="///" if k == "running" and not thin else None,
                     edgecolor="#111" if k in ("topdog", "backfilled") and not thin else "none",
                     linestyle="--" if k == "backfilled" else "-") for k, text in _legend_texts(thin).items()]
    handles.append(Line2D([], [], color="red", linestyle="--", label="now (system_time)"))
    fig.legend(handles=handles, loc="lower center", bbox_to_anchor=(0.5, 0.0), ncol=len(handles), fontsize=8,
               frameon=False)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})  # no version: same bytes
    plt.close(fig)
    return buf.getvalue()


PNG_LABELS = 400  # at most this many job ids written into a PNG (the widest shapes first)


def _png_labels(ax, chart: Chart, f: _Frame) -> None:
    """Each job's id inside its shape where the shape's largest span has room for it (a PNG has
    no tooltips: without them a reader could not tell the jobs apart)."""
    per_second = WIDTH / max(chart.t1 - chart.t0, 1)
    room = []
    for s in chart.shapes:
        if s.kind == "reservation" or not s.spans:
            continue
        a, b = max(s.spans, key=lambda span: span[1] - span[0])
        name = s.tip.split("\n", 1)[0].split(" (", 1)[0]
        wide, high = (s.end - max(s.start, chart.t0)) * per_second, (b - a) * f.row
        if high >= 9 and wide >= 7 * len(name) + 4:
            room.append((wide * high, s, a, b, name))
    for _, s, a, b, name in sorted(room, key=lambda r: (-r[0], r[1].key))[:PNG_LABELS]:
        ax.text(max(s.start, chart.t0), (a + b) / 2, f" {name}", fontsize=7, va="center", ha="left",
                color="#111", clip_on=True)


def render(doc: Document, output: str, title: str, by: str = "auto", tz: str = "local") -> bytes:
    """Bytes of the chart in the format the output name asks for."""
    if not output.endswith((".png", ".html", ".htm", ".svg")) and output != "-":
        raise InputError("gantt", "output", output, "name it .svg, .html or .png")
    chart = layout(doc, title, by, tz)
    if output.endswith(".png"):
        return png(chart)
    if output.endswith((".html", ".htm")):
        return html(chart).encode()
    return svg(chart).encode()
