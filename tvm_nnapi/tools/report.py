# SPDX-License-Identifier: Apache-2.0
"""The ``--report out.html`` page: one self-contained HTML file (inline CSS, JavaScript and SVG;
nothing is fetched, a Content-Security-Policy forbids it) drawn from the same document that
``--json`` prints (docs/cli.md).

Sections: a summary, the partitioned graph (a layered layout computed here, operators coloured
by where they run), the operators kept on the host with their reasons, the NNAPI subgraphs, the
modelled estimate table, and the run's differential result with a timeline of the mock's
modelled execution traces.
"""

from __future__ import annotations

import html
import json
from collections import Counter
from collections.abc import Iterable, Sequence, Set
from typing import Any

HOST_COLOUR = "#d1d5db"
INPUT_COLOUR = "#fef3c7"
NNAPI_COLOUR = "#60a5fa"  # an NNAPI node whose device is not known (no run, no estimate)
# Colours of NNAPI devices, in order of first appearance.
DEVICE_COLOURS = ("#2563eb", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#be185d", "#65a30d")

NODE_WIDTH = 178
NODE_HEIGHT = 38
LAYER_GAP = 22
COLUMN_GAP = 16
SKIP_MARGIN = 48  # room right of the nodes for edges that skip layers

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#111827;
background:#f9fafb}
header{background:#111827;color:#f9fafb;padding:16px 24px}
header h1{margin:0 0 4px;font-size:20px}
header p{margin:2px 0;font-size:13px;color:#d1d5db}
header code{background:#374151;color:#f9fafb}
main{padding:8px 24px 40px}
section{background:#fff;border:1px solid #e5e7eb;border-radius:8px;margin:16px 0;padding:12px 16px}
h2{font-size:16px;margin:4px 0 10px}
.cards{display:flex;flex-wrap:wrap;gap:10px}
.card{border:1px solid #e5e7eb;border-radius:6px;padding:8px 12px;min-width:150px;
background:#f9fafb}
.card b{display:block;font-size:18px}
.card span{font-size:12px;color:#4b5563}
.pass{color:#15803d}.fail{color:#b91c1c}
.modelled{font-size:11px;font-weight:600;color:#92400e;background:#fef3c7;border-radius:4px;
padding:1px 5px;margin-left:6px}
table{border-collapse:collapse;font-size:12.5px;width:100%}
th,td{border-bottom:1px solid #e5e7eb;padding:4px 6px;text-align:left;vertical-align:top}
th{background:#f3f4f6;position:sticky;top:0}
td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.highlight td{background:#fef9c3}
.scroll{overflow:auto;max-height:75vh;border:1px solid #e5e7eb;border-radius:6px}
.legend{display:flex;flex-wrap:wrap;gap:12px;font-size:12px;margin:6px 0}
.legend i{display:inline-block;width:14px;height:14px;border-radius:3px;margin-right:4px;
vertical-align:middle;border:1px solid #6b7280}
svg text{font-family:system-ui,sans-serif}
g.node{cursor:pointer}
g.node.highlight rect{stroke:#f59e0b;stroke-width:3}
.note{font-size:12px;color:#4b5563}
code{background:#f3f4f6;padding:0 3px;border-radius:3px}
"""

# Highlights the nodes of one subgraph and links refusal rows to their node. Errors are recorded
# on <body data-errors> so a headless check (tools/check_report_html.sh) can see them.
_SCRIPT = """
(function(){
  var errors=[];
  window.addEventListener('error',function(e){errors.push(String(e.message));
    document.body.setAttribute('data-errors',errors.join(' | '));});
  function nodes(){return document.querySelectorAll('g.node');}
  function clear(){nodes().forEach(function(n){n.classList.remove('highlight');});
    document.querySelectorAll('tr.highlight').forEach(function(r){r.classList.remove('highlight');});}
  nodes().forEach(function(n){
    n.addEventListener('click',function(){
      clear();
      var group=n.getAttribute('data-group');
      nodes().forEach(function(m){if(group&&m.getAttribute('data-group')===group){
        m.classList.add('highlight');}});
      n.classList.add('highlight');
      var row=document.getElementById('row-'+n.getAttribute('data-binding'));
      if(row){row.classList.add('highlight');}
    });
  });
  document.querySelectorAll('tr[data-node]').forEach(function(row){
    row.addEventListener('click',function(){
      clear(); row.classList.add('highlight');
      var node=document.getElementById('node-'+row.getAttribute('data-node'));
      if(node){node.classList.add('highlight');
        if(node.scrollIntoView){node.scrollIntoView({block:'center',inline:'center'});}}
    });
  });
  document.body.setAttribute('data-ready','1');
})();
"""


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _format_us(micros: float | None) -> str:
    if micros is None:
        return "n/a"
    if micros >= 1e6:
        return f"{micros / 1e6:.3f} s"
    if micros >= 1e3:
        return f"{micros / 1e3:.3f} ms"
    return f"{micros:.1f} µs"


def format_speedup(ratio: float | None) -> str:
    """A speedup with two decimals, or three significant digits below 0.01 (0.00312x, never
    0.00x); n/a when unknown."""
    if ratio is None or not ratio:
        return "n/a"
    return f"{ratio:.2f}x" if ratio >= 0.01 else f"{ratio:.3g}x"


def _format_number(value: float) -> str:
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.2f} {unit}"
    return f"{value:g}"


def _shapes_text(shapes: dict[str, int] | None) -> str:
    return ",".join(f"{k}={v}" for k, v in (shapes or {}).items()) or "static"


def _shorten(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


# ---- graph layout --------------------------------------------------------------------------------


def device_colours(devices: Iterable[str]) -> dict[str, str]:
    """A colour per NNAPI device name, stable in order of first appearance."""
    colours: dict[str, str] = {}
    for device in devices:
        if device not in colours:
            colours[device] = DEVICE_COLOURS[len(colours) % len(DEVICE_COLOURS)]
    return colours


def layout(
    nodes: Sequence[dict[str, Any]], edges: Sequence[Sequence[int]]
) -> tuple[dict[int, tuple[float, float]], float, float]:
    """Positions (top-left x, y) of the nodes in a top-to-bottom layered drawing (as Netron
    draws models), and the drawing's size.

    Layers: the longest path from an input (edges go from earlier to later nodes, the execution
    order), one row each, top to bottom. Within a layer nodes are ordered by the mean position
    of their predecessors and centred, so a chain runs straight down; edges that skip layers
    are routed beside the nodes (:func:`graph_svg`), in a margin kept on the right.
    """
    ids = [int(n["id"]) for n in nodes]
    predecessors: dict[int, list[int]] = {i: [] for i in ids}
    for source, target in edges:
        if source in predecessors and target in predecessors:
            predecessors[int(target)].append(int(source))
    layer: dict[int, int] = {}
    for i in ids:  # ids are in execution order, so predecessors come first
        layer[i] = 1 + max((layer[p] for p in predecessors[i] if p in layer), default=-1)
    layers: dict[int, list[int]] = {}
    for i in ids:
        layers.setdefault(layer[i], []).append(i)
    widest = max((len(members) for members in layers.values()), default=1)
    slot: dict[int, float] = {}
    positions: dict[int, tuple[float, float]] = {}
    height = 0.0
    for row in sorted(layers):
        members = layers[row]

        def barycentre(node: int) -> float:
            known = [slot[p] for p in predecessors[node] if p in slot]
            return sum(known) / len(known) if known else float(node)

        members.sort(key=lambda n: (barycentre(n), n))
        offset = (widest - len(members)) / 2
        for column, node in enumerate(members):
            slot[node] = offset + column
            x = (offset + column) * (NODE_WIDTH + COLUMN_GAP)
            y = row * (NODE_HEIGHT + LAYER_GAP)
            positions[node] = (x, y)
            height = max(height, y + NODE_HEIGHT)
    width = widest * (NODE_WIDTH + COLUMN_GAP) - COLUMN_GAP + SKIP_MARGIN
    return positions, max(width, NODE_WIDTH), height


def _edge_path(
    start: tuple[float, float], end: tuple[float, float], right_of: dict[float, float]
) -> tuple[str, bool]:
    """The SVG path of an edge between two node boxes (top-left corners), and whether it skips
    layers. An edge to the next layer is a short curve; one that skips layers runs down beside
    the nodes it passes (right of the rightmost of them), never across them."""
    x1, y1 = start[0] + NODE_WIDTH / 2, start[1] + NODE_HEIGHT
    x2, y2 = end[0] + NODE_WIDTH / 2, end[1]
    if y2 - y1 <= LAYER_GAP + 1:
        bend = LAYER_GAP / 2
        return (
            f"M{x1:.0f},{y1:.0f} C{x1:.0f},{y1 + bend:.0f} {x2:.0f},{y2 - bend:.0f} "
            f"{x2:.0f},{y2:.0f}",
            False,
        )
    passed = [right for top, right in right_of.items() if y1 < top < y2 - LAYER_GAP / 2]
    side = max([*passed, start[0] + NODE_WIDTH, end[0] + NODE_WIDTH]) + SKIP_MARGIN / 2
    gap = LAYER_GAP / 2
    return (
        f"M{x1:.0f},{y1:.0f} C{x1:.0f},{y1 + gap:.0f} {side:.0f},{y1:.0f} {side:.0f},"
        f"{y1 + gap + 6:.0f} L{side:.0f},{y2 - gap - 6:.0f} C{side:.0f},{y2:.0f} "
        f"{x2:.0f},{y2 - gap:.0f} {x2:.0f},{y2:.0f}",
        True,
    )


def _subgraph_boxes(
    nodes: Sequence[dict[str, Any]], positions: dict[int, tuple[float, float]]
) -> str:
    """One outlined box, labelled with the subgraph and call, around each NNAPI subgraph
    call's nodes (boundaries visible without hovering)."""
    groups: dict[str, list[tuple[float, float]]] = {}
    for node in nodes:
        if node["kind"] == "nnapi" and node.get("subgraph"):
            key = f"{node['subgraph']}#{node.get('call_index') or 0}"
            groups.setdefault(key, []).append(positions[int(node["id"])])
    parts = []
    pad = 6
    for key, corners in groups.items():
        left = min(x for x, _ in corners) - pad
        top = min(y for _, y in corners) - pad
        right = max(x for x, _ in corners) + NODE_WIDTH + pad
        bottom = max(y for _, y in corners) + NODE_HEIGHT + pad
        name, call = key.rsplit("#", 1)
        parts.append(
            f'<g class="subgraph-box" data-group="{_e(key)}"><rect x="{left:.0f}" '
            f'y="{top:.0f}" width="{right - left:.0f}" height="{bottom - top:.0f}" rx="9" '
            f'fill="#eef2ff" fill-opacity="0.55" stroke="#6366f1" stroke-width="1.2" '
            f'stroke-dasharray="6 3"/><text x="{left + 4:.0f}" y="{top - 3:.0f}" '
            f'font-size="10" fill="#4338ca">{_e(name)} (call {_e(call)})</text></g>'
        )
    return "".join(parts)


def node_colour(node: dict[str, Any], colours: dict[str, str]) -> str:
    if node["kind"] == "input":
        return INPUT_COLOUR
    if node["kind"] == "host":
        return HOST_COLOUR
    devices = node.get("devices") or []
    return colours.get(devices[0], NNAPI_COLOUR) if devices else NNAPI_COLOUR


def graph_svg(graph: dict[str, Any], colours: dict[str, str]) -> str:
    """The partitioned graph as an SVG element (see :func:`layout`)."""
    nodes, edges = graph["nodes"], graph["edges"]
    if not nodes:
        return '<p class="note">The entry function has no operators.</p>'
    positions, width, height = layout(nodes, edges)
    margin = 10
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width + 2 * margin:.0f}" '
        f'height="{height + 2 * margin:.0f}" role="img" aria-label="partitioned graph">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" '
        'markerHeight="6" orient="auto-start-reverse"><path d="M0,0L10,5L0,10z" '
        'fill="#6b7280"/></marker></defs>',
        f'<g transform="translate({margin},{margin})">',
    ]
    parts.append(_subgraph_boxes(nodes, positions))
    right_of: dict[float, float] = {}  # per layer (top y): the right edge of its last node
    for x, y in positions.values():
        right_of[y] = max(right_of.get(y, 0.0), x + NODE_WIDTH)
    for source, target in edges:
        if source not in positions or target not in positions:
            continue
        path, skips = _edge_path(positions[source], positions[target], right_of)
        style = ' stroke-opacity="0.6"' if skips else ""
        parts.append(
            f'<path class="{"edge skip" if skips else "edge"}" d="{path}" fill="none" '
            f'stroke="#6b7280" stroke-width="1.2"{style} marker-end="url(#arrow)"/>'
        )
    for node in nodes:
        x, y = positions[int(node["id"])]
        fill = node_colour(node, colours)
        dark = fill in colours.values()
        text_colour = "#ffffff" if dark else "#111827"
        refused = node["kind"] == "host" and node.get("refusal")
        stroke = "#b91c1c" if refused else "#374151"
        dash = ' stroke-dasharray="4 2"' if refused else ""
        stroke_width = "1.2"
        layer = node.get("layerwise") or {}
        if layer.get("first_divergence"):
            stroke, stroke_width, dash = "#dc2626", "3.5", ""  # --layerwise: first divergence
        elif layer and not layer.get("passed", True):
            stroke, stroke_width = "#f87171", "2.2"
        if node["kind"] == "nnapi":
            operations = Counter(node.get("nnapi_operations") or [])
            detail = ", ".join(
                name if count == 1 else f"{name} x{count}"
                for name, count in operations.most_common()
            )
            detail = detail or "NNAPI"
        elif refused:
            detail = node["refusal"]["kind"]
        elif node["kind"] == "input":
            detail = node.get("shape", "")
        else:
            detail = "host"
        tooltip = _node_tooltip(node)
        group = node.get("subgraph") or ""
        if group and node.get("call_index") is not None:
            group = f"{group}#{node['call_index']}"
        parts.append(
            f'<g class="node" id="node-{node["id"]}" data-group="{_e(group)}" '
            f'data-binding="{_e(node.get("binding", ""))}">'
            f"<title>{_e(tooltip)}</title>"
            f'<rect x="{x:.0f}" y="{y:.0f}" width="{NODE_WIDTH}" height="{NODE_HEIGHT}" rx="6" '
            f'fill="{fill}" stroke="{stroke}" stroke-width="{stroke_width}"{dash}/>'
            f'<text x="{x + 8:.0f}" y="{y + 16:.0f}" font-size="12" font-weight="600" '
            f'fill="{text_colour}">{_e(_shorten(node["label"], 26))}</text>'
            f'<text x="{x + 8:.0f}" y="{y + 31:.0f}" font-size="10.5" fill="{text_colour}">'
            f"{_e(_shorten(detail, 30))}</text></g>"
        )
    parts.append("</g></svg>")
    return "".join(parts)


def _node_tooltip(node: dict[str, Any]) -> str:
    lines = [f"{node['label']}  ({node.get('binding', '')})"]
    if node["kind"] == "nnapi":
        lines.append(f"NNAPI subgraph {node.get('subgraph')} (call {node.get('call_index')})")
        if node.get("composite"):
            lines.append(f"pattern {node['composite']}")
        lines.append("NNAPI operations: " + (", ".join(node.get("nnapi_operations") or []) or "?"))
        if node.get("devices"):
            lines.append("devices: " + ", ".join(node["devices"]))
    elif node["kind"] == "host":
        lines.append("on the host (TVM llvm)")
        if node.get("refusal"):
            lines.append(f"{node['refusal']['kind']}: {node['refusal']['reason']}")
    if node.get("relax_operators"):
        lines.append("Relax: " + ", ".join(node["relax_operators"]))
    if node.get("shape"):
        lines.append(f"result: {node['shape']}")
    if node.get("flops"):
        lines.append(f"FLOPs: {_format_number(node['flops'])}")
    if node.get("layerwise"):
        layer = node["layerwise"]
        lines.append(
            f"layer-wise: max rel error {layer['max_rel_error']:.3e} (tolerance "
            f"{layer['tolerance']:.0e})"
            + (", the first operator over the tolerance" if layer.get("first_divergence") else "")
        )
    return "\n".join(lines)


def _legend(colours: dict[str, str], any_unknown: bool) -> str:
    items = [
        f'<span><i style="background:{INPUT_COLOUR}"></i>input</span>',
        f'<span><i style="background:{HOST_COLOUR}"></i>host (TVM llvm)</span>',
        f'<span><i style="background:{HOST_COLOUR};border:1px dashed #b91c1c"></i>'
        "host, refused by NNAPI (reason in the table)</span>",
    ]
    for device, colour in colours.items():
        items.append(f'<span><i style="background:{colour}"></i>NNAPI on {_e(device)}</span>')
    items.append(
        '<span><i style="background:#eef2ff;border:1px dashed #6366f1"></i>'
        "one NNAPI subgraph call (its name and call number above the box)</span>"
    )
    if any_unknown or not colours:
        items.append(
            f'<span><i style="background:{NNAPI_COLOUR}"></i>NNAPI (device chosen when NNAPI '
            "compiles; run or estimate with a profile to see it)</span>"
        )
    return '<div class="legend">' + "".join(items) + "</div>"


# ---- timeline ------------------------------------------------------------------------------------


def timeline_svg(timeline: dict[str, Any], colours: dict[str, str]) -> str:
    """Lanes per device, executions end to end on the MODELLED clock (µs)."""
    events = timeline.get("events", [])
    if not events:
        return '<p class="note">No NNAPI execution was traced.</p>'
    lanes: list[str] = []
    for event in events:
        if event["lane"] not in lanes:
            lanes.append(event["lane"])
    total = max(e["start_us"] + e["duration_us"] for e in events) or 1.0
    label_width, plot_width, lane_height = 150, 1000, 26
    right_margin = 60  # the last tick's label is centred on the plot's right end
    height = len(lanes) * lane_height + 62
    scale = plot_width / total
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" '
        f'width="{label_width + plot_width + right_margin}" '
        f'height="{height}" role="img" aria-label="modelled timeline">'
    ]
    for index, lane in enumerate(lanes):
        y = index * lane_height
        parts.append(
            f'<text x="4" y="{y + 17}" font-size="12">{_e(_shorten(lane, 22))}</text>'
            f'<line x1="{label_width}" y1="{y + lane_height}" x2="{label_width + plot_width}" '
            f'y2="{y + lane_height}" stroke="#e5e7eb"/>'
        )
    for event in events:
        y = lanes.index(event["lane"]) * lane_height + 4
        x = label_width + event["start_us"] * scale
        w = max(event["duration_us"] * scale, 0.8)
        kind = event["kind"]
        if kind == "operation":
            fill = colours.get(event["lane"], NNAPI_COLOUR)
        else:
            fill = TIMELINE_COLOURS.get(kind, TIMELINE_COLOURS["runtime"])[0]
        tooltip = (
            f"{event['name']} ({kind}) on {event['lane']}\nmodelled start "
            f"{event['start_us']:.2f} µs, duration {event['duration_us']:.2f} µs"
        )
        if event.get("execution"):
            tooltip += f"\n{event['execution']}"
        parts.append(
            f'<rect x="{x:.2f}" y="{y}" width="{w:.2f}" height="{lane_height - 8}" '
            f'fill="{fill}" stroke="#374151" stroke-width="0.3"><title>{_e(tooltip)}</title></rect>'
        )
    axis_y = len(lanes) * lane_height + 14
    for tick in range(6):
        value = total * tick / 5
        x = label_width + value * scale
        parts.append(
            f'<line x1="{x:.1f}" y1="0" x2="{x:.1f}" y2="{axis_y - 8}" stroke="#f3f4f6"/>'
            f'<text x="{x:.1f}" y="{axis_y + 6}" font-size="10" text-anchor="middle">'
            f"{_e(_format_us(value))}</text>"
        )
    parts.append(
        f'<text x="{label_width + plot_width / 2}" y="{axis_y + 22}" font-size="11" '
        'text-anchor="middle">time since the first execution started (MODELLED µs/ms)</text>'
        f'<text x="{label_width}" y="{axis_y + 40}" font-size="11" fill="#92400e">'
        "MODELLED time on the profile's devices (cost model), not measured</text></svg>"
    )
    return "".join(parts) + _timeline_legend(
        {e["lane"] for e in events if e["kind"] == "operation"}, colours
    )


# Colours of the timeline's span kinds other than operations (which take their device's).
TIMELINE_COLOURS = {
    "execution": ("#e5e7eb", "one NNAPI execution (a subgraph call)"),
    "transfer": ("#f59e0b", "transfer between host and device memory"),
    "runtime": ("#9ca3af", "NNAPI runtime or driver work"),
}


def _timeline_legend(devices: Iterable[str], colours: dict[str, str]) -> str:
    items = [
        f'<span><i style="background:{fill}"></i>{_e(text)}</span>'
        for fill, text in TIMELINE_COLOURS.values()
    ]
    for device in sorted(devices):
        fill = colours.get(device, NNAPI_COLOUR)
        items.append(f'<span><i style="background:{fill}"></i>operation on {_e(device)}</span>')
    return '<div class="legend timeline-legend">' + "".join(items) + "</div>"


def timeline_from_traces(
    traces: Sequence[dict[str, Any]], labels: Sequence[str] | None = None
) -> dict[str, Any]:
    """A compact timeline from the mock's execution traces: every execution laid end to end on
    one MODELLED clock, one lane per device (and one for the NNAPI runtime's spans)."""
    events: list[dict[str, Any]] = []
    clock = 0.0
    for index, trace in enumerate(traces):
        label = labels[index] if labels and index < len(labels) else f"execution {trace['id']}"
        total = float(trace.get("modelled_total_us", 0.0))
        events.append(
            {
                "execution": label,
                "lane": "executions",
                "kind": "execution",
                "name": label,
                "start_us": clock,
                "duration_us": total,
            }
        )
        for event in trace.get("events", []):
            events.append(
                {
                    "execution": label,
                    "lane": str(event.get("device")),
                    "kind": str(event.get("kind")),
                    "name": str(event.get("name")),
                    "start_us": clock + float(event.get("start_us", 0.0)),
                    "duration_us": float(event.get("duration_us", 0.0)),
                }
            )
        clock += total
    return {"modelled": True, "unit": "us", "total_us": clock, "events": events}


# ---- tables --------------------------------------------------------------------------------------


def _table(
    headers: Sequence[str], rows: Iterable[Sequence[str]], numeric: Set[int] = frozenset()
) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = []
    for row in rows:
        cells = "".join(
            f'<td class="num">{cell}</td>' if i in numeric else f"<td>{cell}</td>"
            for i, cell in enumerate(row)
        )
        body.append(f"<tr>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _counts(counts: dict[str, int]) -> str:
    return _e(", ".join(f"{k.removeprefix('relax.')} x{v}" for k, v in sorted(counts.items())))


def _summary_cards(document: dict[str, Any]) -> str:
    cards = []
    explanation = document.get("explain")
    if explanation:
        share = explanation.get("flop_share")
        cards += [
            (
                f"{explanation['offloaded_operators']} / {explanation['total_operators']}",
                "Relax operators offloaded",
            ),
            (f"{share:.1%}" if share is not None else "n/a", "estimated FLOPs offloaded"),
            (str(len(explanation["subgraphs"])), "NNAPI subgraphs"),
            (str(explanation["boundary_transfers"]), "host↔NNAPI boundary values"),
            (str(len(explanation["refusals"])), "operators refused"),
        ]
    estimate = document.get("estimate")
    if estimate:
        totals = estimate.get("totals", {})
        cards += [
            (_format_us(totals.get("modelled_nnapi_program_us")), "NNAPI-offloaded (modelled)"),
            (_format_us(totals.get("modelled_host_program_us")), "all on host (modelled)"),
            (format_speedup(totals.get("modelled_speedup")), "modelled speedup"),
        ]
    run = document.get("run")
    if run:
        verdict = "PASS" if run["passed"] else "FAIL"
        css = "pass" if run["passed"] else "fail"
        cards += [
            (f'<span class="{css}">{verdict}</span>', "NNAPI (mock) vs host llvm"),
            (f"{run['max_rel_error']:.2e}", "max relative error"),
            (str(run["nnapi_operations_executed"]), "NNAPI operations executed"),
        ]
    return (
        '<div class="cards">'
        + "".join(
            f"<div class=card><b>{value if value.startswith('<') else _e(value)}</b>"
            f"<span>{_e(label)}</span></div>"
            for value, label in cards
        )
        + "</div>"
    )


def _refusal_section(explanation: dict[str, Any], graph: dict[str, Any] | None) -> str:
    refusals = explanation.get("refusals", [])
    if not refusals:
        return (
            "<section><h2>Operators kept on the host</h2><p>None: every operator is offloaded."
            "</p></section>"
        )
    node_of = {}
    for node in (graph or {}).get("nodes", []):
        if node.get("refusal"):
            node_of[(node["binding"], node["refusal"]["operator"])] = node["id"]
    # Identical refusals (operator, kind, reason), e.g. a 7B LLM's 32 KV-cache attention
    # calls, are one row listing their bindings.
    groups: dict[tuple[str, str, str], list[str]] = {}
    for refusal in refusals:
        key = (refusal["operator"], refusal["kind"], refusal["reason"])
        groups.setdefault(key, []).append(refusal["binding"])
    rows = []
    for (operator, kind, reason), bindings in groups.items():
        node = node_of.get((bindings[0], operator))
        attributes = f' id="row-{_e(bindings[0])}"'
        if node is not None:
            attributes += f' data-node="{node}"'
        shown = ", ".join(bindings[:6])
        if len(bindings) > 6:
            shown += f", … ({len(bindings)} in all)"
        rows.append(
            f"<tr{attributes}><td><code>{_e(shown)}</code></td>"
            f"<td><code>{_e(operator)}</code></td><td>{_e(kind)}</td>"
            f"<td>{_e(reason)}</td></tr>"
        )
    return (
        "<section><h2>Operators kept on the host, and why</h2>"
        '<p class="note">Click a row to find the operator in the graph.</p>'
        "<table><thead><tr><th>bindings</th><th>operator</th><th>reason kind</th><th>reason</th>"
        f"</tr></thead><tbody>{''.join(rows)}</tbody></table></section>"
    )


def _subgraph_section(explanation: dict[str, Any], devices: dict[str, list[str]]) -> str:
    rows = []
    for sub in explanation.get("subgraphs", []):
        rows.append(
            [
                f"<code>{_e(sub['name'])}</code>",
                _e(str(sub.get("calls", 1))),
                _counts(sub["relax_operators"]),
                _counts(sub["nnapi_operations"]),
                _e(f"{sub['inputs']}/{sub['outputs']}"),
                _e(", ".join(sub["symbols"]) or "—"),
                _e(", ".join(devices.get(sub["name"], [])) or "chosen at NNAPI compilation"),
            ]
        )
    if not rows:
        return "<section><h2>NNAPI subgraphs</h2><p>No operator is offloaded.</p></section>"
    table = _table(
        [
            "subgraph",
            "calls",
            "Relax operators (per call)",
            "NNAPI operations (per call)",
            "in/out",
            "symbols",
            "devices",
        ],
        rows,
    )
    return f"<section><h2>NNAPI subgraphs</h2>{table}</section>"


def _estimate_section(estimate: dict[str, Any]) -> str:
    rows = []
    for sub in estimate.get("subgraphs", []):
        rows.append(
            [
                f"<code>{_e(sub['name'])}</code>",
                _e(sub.get("calls", 1)),
                _e(", ".join(sub.get("devices", [])) or "—"),
                _e(_format_number(float(sub.get("flops", 0)))),
                _e(_format_us(sub.get("modelled_compute_us"))),
                _e(_format_us(sub.get("modelled_input_setup_us"))),
                _e(_format_us(sub.get("modelled_transfer_us"))),
                _e(_format_us(sub.get("modelled_driver_overhead_us"))),
                _e(_format_us(sub.get("modelled_nnapi_us"))),
                _e(_format_us(sub.get("modelled_host_us"))),
                _e(format_speedup(sub.get("modelled_speedup"))),
            ]
        )
    table = _table(
        [
            "subgraph",
            "calls",
            "devices",
            "FLOPs",
            "compute",
            "input set-up",
            "transfers",
            "driver overhead",
            "NNAPI per call",
            "host per call",
            "speedup",
        ],
        rows,
        numeric=frozenset(range(1, 11)) - {2},
    )
    host_rows = [
        [
            f"<code>{_e(row['name'])}</code>",
            _e(row.get("kind", "")),
            _e(row.get("calls", "")),
            _e(_format_number(float(row.get("flops", 0)))),
            _e(_format_us(row.get("modelled_host_us")) if row.get("modelled", True) else "unknown"),
        ]
        for row in estimate.get("host_rows", [])
    ]
    totals = estimate.get("totals", {})
    total_rows = [
        [_e(key), _e(_format_us(value) if key.endswith("_us") else f"{value:.3g}")]
        for key, value in totals.items()
        if isinstance(value, int | float)
    ]
    parts = [
        '<section><h2>Estimate<span class="modelled">MODELLED</span></h2>',
        f'<p class="note">Profile <code>{_e(estimate.get("profile"))}</code>, entry '
        f"<code>{_e(estimate.get('entry'))}</code>, shapes "
        f"<code>{_e(_shapes_text(estimate.get('shapes')))}</code>, "
        f"host model {_e((estimate.get('host_model') or {}).get('name', ''))}. Every time is an "
        "output of the cost model (docs/cost-model.md), not a measurement.</p>",
        table,
    ]
    if host_rows:
        parts.append("<h2>Host operators (both programs)</h2>")
        parts.append(
            _table(
                ["operator", "kind", "calls", "FLOPs", "host time"],
                host_rows,
                frozenset({2, 3, 4}),
            )
        )
    if total_rows:
        parts.append("<h2>Totals</h2>")
        parts.append(_table(["quantity", "value"], total_rows, frozenset({1})))
    parts.append("</section>")
    return "".join(parts)


def _device_choice(choice: dict[str, Any] | None) -> str:
    """--devices / --no-nnapi-cpu as text ("NNAPI chooses" without them)."""
    if not choice:
        return "NNAPI chooses (no --devices)"
    text = ", ".join(choice.get("devices") or []) or "all devices"
    return text + (" without CPUs" if choice.get("exclude_cpu") else "")


def _run_section(run: dict[str, Any], timeline: dict[str, Any] | None, colours: dict) -> str:
    rows = [
        [
            _e(o["index"]),
            _e("x".join(str(d) for d in o["shape"])),
            _e(o["dtype"]),
            _e(f"{o['max_abs_error']:.3e}"),
            _e(f"{o['max_rel_error']:.3e}"),
            _e(f"{o['tolerance']:.0e}"),
            '<span class="pass">pass</span>' if o["passed"] else '<span class="fail">FAIL</span>',
        ]
        for o in run["outputs"]
    ]
    measured = run.get("measured_seconds", {})
    modelled = run.get("modelled", {})
    facts = [
        ["NNAPI library", _e(run["nnapi_library"])],
        ["device profile", _e(run["profile"])],
        ["NNAPI devices chosen", _e(_device_choice(run.get("device_choice")))],
        [
            "NNAPI really ran",
            _e(
                f"{run['nnapi_ran']} ({run['nnapi_executions']} executions, "
                f"{run['nnapi_operations_executed']} operations)"
            ),
        ],
        *[
            [_e(f"{name.replace('_', ' ')} (measured on this host)"), _e(f"{value:.4f} s")]
            for name, value in measured.items()
        ],
        [
            'NNAPI executions <span class="modelled">MODELLED</span>',
            _e(_format_us(modelled.get("nnapi_total_us"))),
        ],
    ]
    parts = [
        "<section><h2>Run on the mock NNAPI vs the host llvm build</h2>",
        _table(
            ["output", "shape", "dtype", "max abs error", "max rel error", "tolerance", "result"],
            rows,
            {3, 4, 5},
        ),
        "<br>",
        _table(["", ""], facts),
        '<p class="note">Wall-clock times are measured on this machine, where the mock computes '
        "with reference kernels: they say nothing about a phone. Modelled times come from the "
        "cost model of the profile.</p>",
    ]
    if run.get("trace_file"):
        parts.append(
            f'<p class="note">Perfetto trace: <code>{_e(run["trace_file"])}</code> (open it in '
            "Perfetto's UI).</p>"
        )
    if run.get("layerwise"):
        parts.append(_layerwise_section(run["layerwise"]))
    if timeline:
        parts.append('<h2>Timeline<span class="modelled">MODELLED</span></h2>')
        parts.append(f'<div class="scroll">{timeline_svg(timeline, colours)}</div>')
    parts.append("</section>")
    return "".join(parts)


def _verdict(passed: bool) -> str:
    return '<span class="pass">pass</span>' if passed else '<span class="fail">FAIL</span>'


def _layerwise_section(layers: dict[str, Any]) -> str:
    """--layerwise: the first operator over the tolerance and the largest errors."""
    first = layers.get("first_divergence")
    rows = layers.get("rows", [])
    shown = sorted(rows, key=lambda r: -r["max_rel_error"])[:12]
    if first is not None and first not in shown:
        shown = [first, *shown[:11]]
    table = _table(
        ["subgraph", "call", "binding", "Relax", "NNAPI", "max abs error", "max rel error",
         "tolerance", "result"],
        [
            [
                f"<code>{_e(r['subgraph'])}</code>",
                _e(r["call_index"]),
                f"<code>{_e(r['binding'])}</code>",
                _e(" + ".join(op.removeprefix("relax.") for op in r["relax_operators"])),
                _e(", ".join(r["nnapi_operations"])),
                _e(f"{r['max_abs_error']:.3e}"),
                _e(f"{r['max_rel_error']:.3e}"),
                _e(f"{r['tolerance']:.0e}"),
                _verdict(r["passed"]),
            ]
            for r in shown
        ],
        {5, 6, 7},
    )  # fmt: skip
    if first is None:
        verdict = f"Every one of the {len(rows)} NNAPI operators is within the tolerance."
    else:
        error = f"{first['max_rel_error']:.3e}"
        verdict = (
            f"First operator over the tolerance: <code>{_e(first['subgraph'])}</code> call "
            f"{_e(first['call_index'])}, <code>{_e(first['binding'])}</code> "
            f"({_e(', '.join(first['nnapi_operations']))}), max relative error "
            f"{_e(error)} (its node is outlined in red in "
            "the graph)."
        )
    return (
        "<h2>Layer-wise comparison</h2>"
        '<p class="note">Each NNAPI operator against the host computation of the same operator, '
        f"on the inputs the host computes for its subgraph ({_e(layers.get('precision'))}). "
        f"{verdict}</p>{table}"
    )


# ---- the page ------------------------------------------------------------------------------------


def render_html(document: dict[str, Any]) -> str:
    """The report page for a ``--json`` document (docs/cli.md)."""
    model = document.get("model", {})
    explanation = document.get("explain")
    graph = (explanation or {}).get("graph")
    estimate = document.get("estimate")
    run = document.get("run")
    timeline = document.get("timeline")

    subgraph_devices: dict[str, list[str]] = {
        name: list(devices)
        for name, devices in ((explanation or {}).get("subgraph_devices") or {}).items()
    }
    for sub in (estimate or {}).get("subgraphs", []):
        subgraph_devices[sub["name"]] = list(sub.get("devices", []))
    if graph:
        for node in graph["nodes"]:
            if node["kind"] == "nnapi" and not node.get("devices"):
                node["devices"] = subgraph_devices.get(node.get("subgraph") or "", [])
            if node.get("devices") and node.get("subgraph"):
                known = subgraph_devices.setdefault(node["subgraph"], [])
                known.extend(d for d in node["devices"] if d not in known)
    seen = [d for devices in subgraph_devices.values() for d in devices]
    seen += [e["lane"] for e in (timeline or {}).get("events", []) if e["kind"] == "operation"]
    colours = device_colours(seen)

    title = f"tvm-nnapi {document.get('command', '')}: {model.get('spec', '')}"
    header = (
        f"<header><h1>{_e(title)}</h1><p>{_e(model.get('description', ''))}</p>"
        f"<p>entry <code>{_e(model.get('entry', ''))}</code> · shapes "
        f"{_e(_shapes_text(model.get('shapes')))} · profile "
        f"{_e(document.get('profile') or 'reference')} · tvm-nnapi "
        f"{_e(document.get('version', ''))}</p></header>"
    )
    sections = [f"<section><h2>Summary</h2>{_summary_cards(document)}</section>"]
    if graph:
        unknown = any(n["kind"] == "nnapi" and not n.get("devices") for n in graph["nodes"])
        detail = (
            "one node per pattern matched inside an NNAPI subgraph, one per host operator"
            if graph["detail"] == "operator"
            else "one node per NNAPI subgraph call (the program is large)"
        )
        sections.append(
            f"<section><h2>Partitioned graph of <code>{_e(graph['entry'])}</code></h2>"
            f'<p class="note">{_e(detail)}; hover a node for details, click it to highlight '
            f"its subgraph call.</p>{_legend(colours, unknown)}"
            f'<div class="scroll">{graph_svg(graph, colours)}</div></section>'
        )
    if explanation:
        sections.append(_refusal_section(explanation, graph))
        sections.append(_subgraph_section(explanation, subgraph_devices))
    if estimate:
        sections.append(_estimate_section(estimate))
    if run:
        sections.append(_run_section(run, timeline, colours))
    data = json.dumps({"schema": document.get("schema"), "command": document.get("command")})
    return (
        "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head>"
        f"<body data-report='{_e(data)}'>{header}<main>{''.join(sections)}</main>"
        f"<script>{_SCRIPT}</script></body></html>\n"
    )


def write_report(path: str, document: dict[str, Any]) -> None:
    with open(path, "w", encoding="utf-8") as file:
        file.write(render_html(document))


__all__ = ["graph_svg", "layout", "render_html", "timeline_from_traces", "write_report"]
