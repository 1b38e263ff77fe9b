"""Gantt chart of a predicted file: time across, nodes (or cores) down, like LLview's view.

Running jobs are drawn pale and hatched, predicted ones solid, top dogs with a thick dark
outline, advance reservations shaded grey, and a red line marks ``system_time``. Each job is
drawn once per contiguous node range, so charts of thousands of jobs on thousands of nodes
stay small. SVG and HTML need nothing else; PNG draws the same boxes with matplotlib
(``pip install 'jufo[plot]'``).
"""

from __future__ import annotations

import colorsys
import zlib
from dataclasses import dataclass
from html import escape

from .dates import format_date
from .errors import InputError
from .lml import Document
from .views import Bar, bars, now_of
from .values import MAX_CORES_PER_NODE, count_of

WIDTH, LEFT, TOP, BOTTOM, RIGHT = 1200, 90, 50, 40, 20
MAX_LANES = 4096  # core rows of an AttributeState chart; larger machines share rows


@dataclass
class Box:
    x0: float
    x1: float
    y0: float
    y1: float
    colour: str
    kind: str  # running, predicted, topdog, reservation
    label: str


@dataclass
class Chart:
    boxes: list[Box]
    rows: int
    row_label: str  # "nodes" or "cores"
    t0: int
    t1: int
    now: int
    fmt: str
    title: str


def colour(key: str) -> str:
    """A stable colour per job, as #rrggbb (understood by every SVG viewer).

    >>> colour("j1") == colour("j1"), len(colour("j1"))
    (True, 7)
    """
    r, g, b = colorsys.hls_to_rgb((zlib.crc32(key.encode()) % 360) / 360, 0.55, 0.65)
    return f"#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}"


def layout(doc: Document, title: str = "") -> Chart:
    """Place every job and reservation of a predicted file."""
    now, fmt = now_of(doc)
    jobs = [b for b in bars(doc) if b.start is not None and b.end is not None]
    node_objs = doc.of_type("node")
    by_node = any(b.groups for b in jobs)
    end = max([b.end for b in jobs] + [now + 60])
    t0 = now - max(60, (end - now) // 10)
    boxes: list[Box] = []
    if by_node:
        ncores = [count_of(o, "ncores", 1, 1, MAX_CORES_PER_NODE) for o in node_objs]
        per_core = sum(ncores) <= MAX_LANES  # small machines: a row per core, node after node
        offset = [0]
        for n in ncores:
            offset.append(offset[-1] + (n if per_core else 1))
        rows = offset[-1]
        for b in jobs:
            for lo, hi, cores in b.groups:
                if not per_core:
                    boxes.append(_box(b, max(b.start, t0), b.end, offset[lo], offset[hi + 1], now, fmt))
                    continue
                for n in range(lo, hi + 1):
                    for c_lo, c_hi in cores or [(0, ncores[n] - 1)]:
                        boxes.append(_box(b, max(b.start, t0), b.end, offset[n] + c_lo, offset[n] + c_hi + 1, now, fmt))
        boxes.extend(_reservations(doc, node_objs, t0, fmt, offset))
        label = "cores, node after node" if per_core else "nodes"
    else:
        capacity = sum(count_of(o, "ncores", 0, 0, MAX_CORES_PER_NODE) for o in node_objs) or max(
            (b.cores for b in jobs), default=1)
        scale = max(1, -(-capacity // MAX_LANES))
        rows = -(-capacity // scale)
        lanes = [t0] * rows  # busy until
        for b in sorted(jobs, key=lambda j: (j.start, j.id)):
            need = min(rows, -(-b.cores // scale))
            first = _first_fit(lanes, need, max(b.start, t0))
            for i in range(first, first + need):
                lanes[i] = b.end
            boxes.append(_box(b, max(b.start, t0), b.end, first, first + need, now, fmt))
        label = "cores" if scale == 1 else f"cores (×{scale})"
    return Chart(boxes, max(rows, 1), label, t0, end, now, fmt, title)


def _first_fit(lanes: list[int], need: int, start: int) -> int:
    run = 0
    for i, busy in enumerate(lanes):
        run = run + 1 if busy <= start else 0
        if run == need:
            return i - need + 1
    return 0  # overlapping on screen only; the prediction itself never overcommits


def _box(b: Bar, start: int, end: int, y0: int, y1: int, now: int, fmt: str) -> Box:
    kind = "running" if b.running else "topdog" if b.topdog else "predicted"
    label = (f"{b.name} ({b.owner}, {b.queue}) {format_date(b.start, fmt)} – {format_date(b.end, fmt)}"
             + (" running" if b.running else " top dog" if b.topdog else " backfilled" if b.backfilled else ""))
    return Box(start, end, y0, y1, colour(b.id), kind, label)


def _reservations(doc: Document, node_objs, t0: int, fmt: str, offset: list[int]) -> list[Box]:
    """Shaded boxes for the file's reservations, read as the forecast reads them."""
    from .errors import Report
    from .node import read_nodes
    from .ranges import bits_of
    from .reservation import read_reservations

    quiet = Report(collect=True)  # the chart draws what can be read; predict reports the rest
    machine = read_nodes(node_objs, quiet)
    out = []
    for res in read_reservations(doc.of_type("reservation"), machine, 0, quiet):  # epoch 0: absolute times
        for n in bits_of(res.resources.node_mask()):
            out.append(Box(max(res.start, t0), res.end, offset[n], offset[n + 1], "#999999", "reservation",
                           f"reservation {res.id} {format_date(res.start, fmt)} – {format_date(res.end, fmt)}"))
    return out


def _ticks(chart: Chart, count: int = 8) -> list[int]:
    step = max(1, (chart.t1 - chart.t0) // count)
    for nice in (1, 2, 5, 10, 15, 30, 60, 300, 900, 1800, 3600, 7200, 21600, 43200, 86400, 604800):
        if nice >= step:
            step = nice
            break
    first = (chart.t0 // step + 1) * step
    return list(range(first, chart.t1 - step // 2, step))


def _tick_format(chart: Chart) -> str:
    ticks = _ticks(chart)
    return "%H:%M:%S" if len(ticks) > 1 and ticks[1] - ticks[0] < 60 else "%m-%d %H:%M"


def svg(chart: Chart) -> str:
    """The chart as a standalone SVG document."""
    height = max(200, min(chart.rows * 14, 900))
    row_h = height / chart.rows
    span = max(1, chart.t1 - chart.t0)

    def x(t: float) -> float:
        return LEFT + (t - chart.t0) * WIDTH / span

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{LEFT + WIDTH + RIGHT}" height="{TOP + height + BOTTOM}" '
        f'font-family="sans-serif" font-size="11">',
        '<defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" '
        'patternTransform="rotate(45)"><line x1="0" y1="0" x2="0" y2="6" stroke="#000" stroke-opacity="0.35" '
        'stroke-width="2"/></pattern></defs>',
        f'<text x="{LEFT}" y="20" font-size="14" font-weight="bold">{escape(chart.title)}</text>',
        f'<text x="{LEFT}" y="38" fill="#555">solid: predicted · hatched: running · '
        f'dark outline: top dog · grey: reservation · red line: system_time</text>',
        f'<rect x="{LEFT}" y="{TOP}" width="{WIDTH}" height="{height}" fill="#fafafa" stroke="#ccc"/>',
    ]
    outline = 2 if row_h >= 4 else 0.5  # thin outlines where rows are thin
    for b in chart.boxes:
        x0, x1 = x(b.x0), x(b.x1)
        y0, h = TOP + b.y0 * row_h, max((b.y1 - b.y0) * row_h, 0.5)
        w = max(x1 - x0, 0.5)
        style = {
            "running": f'fill="{b.colour}" fill-opacity="0.45"',
            "predicted": f'fill="{b.colour}"',
            "topdog": f'fill="{b.colour}" stroke="#222" stroke-width="{outline}"',
            "reservation": 'fill="#999" fill-opacity="0.5"',
        }[b.kind]
        out.append(f'<rect x="{x0:.1f}" y="{y0:.2f}" width="{w:.1f}" height="{h:.2f}" {style}>'
                   f'<title>{escape(b.label)}</title></rect>')
        if b.kind == "running":
            out.append(f'<rect x="{x0:.1f}" y="{y0:.2f}" width="{w:.1f}" height="{h:.2f}" fill="url(#hatch)"/>')
    for t in _ticks(chart):
        out.append(f'<line x1="{x(t):.1f}" y1="{TOP + height}" x2="{x(t):.1f}" y2="{TOP + height + 5}" stroke="#333"/>')
        out.append(f'<text x="{x(t):.1f}" y="{TOP + height + 18}" text-anchor="middle">'
                   f'{escape(format_date(t, _tick_format(chart)))}</text>')
    out.append(f'<line x1="{x(chart.now):.1f}" y1="{TOP}" x2="{x(chart.now):.1f}" y2="{TOP + height}" '
               f'stroke="red" stroke-width="1.5" stroke-dasharray="4 3"/>')
    for frac in (0, 0.25, 0.5, 0.75):
        row = int(frac * chart.rows)
        out.append(f'<text x="{LEFT - 6}" y="{TOP + row * row_h + 10:.1f}" text-anchor="end">{row + 1}</text>')
    out.append(f'<text x="14" y="{TOP + height / 2:.0f}" transform="rotate(-90 14 {TOP + height / 2:.0f})" '
               f'text-anchor="middle">{escape(chart.row_label)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def html(chart: Chart) -> str:
    """The SVG in a page: hovering a bar shows the job."""
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{escape(chart.title)}</title></head>\n"
            f"<body style=\"font-family:sans-serif\">\n{svg(chart)}</body></html>\n")


def png(chart: Chart) -> bytes:
    """The same boxes drawn with matplotlib (an optional extra)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import io

        import matplotlib.pyplot as plt
        from matplotlib.patches import Rectangle
    except ImportError:
        raise InputError("gantt", "output", ".png", "PNG needs matplotlib: pip install 'jufo[plot]' "
                         "(or write .svg or .html)") from None
    fig, ax = plt.subplots(figsize=(14, 7), dpi=100)
    for b in chart.boxes:
        face = b.colour
        ax.add_patch(Rectangle((b.x0, b.y0), b.x1 - b.x0, b.y1 - b.y0, facecolor=face,
                               alpha=0.45 if b.kind in ("running", "reservation") else 1.0,
                               hatch="//" if b.kind == "running" else None,
                               edgecolor="#222" if b.kind == "topdog" else "none",
                               linewidth=1.5 if b.kind == "topdog" else 0))
    ax.axvline(chart.now, color="red", linestyle="--", linewidth=1)
    ax.set_xlim(chart.t0, chart.t1)
    ax.set_ylim(chart.rows, 0)
    ticks = _ticks(chart)
    ax.set_xticks(ticks, [format_date(t, _tick_format(chart)) for t in ticks])
    ax.set_ylabel(chart.row_label)
    ax.set_title(chart.title)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def render(doc: Document, output: str, title: str) -> bytes:
    """Bytes of the chart in the format the output name asks for."""
    chart = layout(doc, title)
    if output.endswith(".png"):
        return png(chart)
    if output.endswith((".html", ".htm")):
        return html(chart).encode()
    if output.endswith(".svg") or output == "-":
        return svg(chart).encode()
    raise InputError("gantt", "output", output, "name it .svg, .html or .png")
