# SPDX-License-Identifier: Apache-2.0
"""The partitioned graph of the ``--report`` page (:mod:`.report`) as SVG: a layered layout and
the routing of its edges.

:func:`layout` places the nodes of a graph (``explain``'s ``graph``: nodes in execution order,
edges from earlier to later nodes) in layers top to bottom, as Netron draws models;
:func:`graph_svg` draws them, colouring each node by where it runs (:func:`node_colour`: a
colour per NNAPI device from :func:`device_colours`), outlining each NNAPI subgraph call, and
routing an edge that skips layers beside the nodes it passes, never across them; ``_legend``
explains the colours. The drawing is a function of its input only.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from .report_assets import _e, _format_number, _shorten, operator_label

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
# Characters that fit a node box's width: its label (12 px, semibold) and detail (10.5 px).
LABEL_CHARS = 22
DETAIL_CHARS = 27


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
            f'fill="{text_colour}">{_e(_node_label(node))}</text>'
            f'<text x="{x + 8:.0f}" y="{y + 31:.0f}" font-size="10.5" fill="{text_colour}">'
            f"{_e(_shorten(detail, DETAIL_CHARS, ', '))}</text></g>"
        )
    parts.append("</g></svg>")
    return "".join(parts)


def _node_label(node: dict[str, Any]) -> str:
    """A node's first line: its operators by the ones that compute (:func:`operator_label`),
    cut to the box between operators; the full label is in the node's tooltip."""
    if node["kind"] == "nnapi" and node.get("relax_operators") and node.get("composite"):
        return operator_label(node["relax_operators"], LABEL_CHARS)
    return _shorten(node["label"], LABEL_CHARS, " + ")


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
        from .layerwise import error_text, tolerance_text

        layer = node["layerwise"]
        if layer.get("model_nodes"):
            lines.append("model nodes: " + ", ".join(layer["model_nodes"]))
        lines.append(
            f"layer-wise: max error {error_text(layer)} (tolerance {tolerance_text(layer)})"
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
