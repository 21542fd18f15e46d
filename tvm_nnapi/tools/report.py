# SPDX-License-Identifier: Apache-2.0
"""The ``--report out.html`` page: one self-contained HTML file (inline CSS, JavaScript and SVG;
nothing is fetched, a Content-Security-Policy forbids it) drawn from the same document that
``--json`` prints (docs/cli.md).

Sections: a summary, the partitioned graph (a layered layout, operators coloured by where they
run), the operators kept on the host with their reasons, the NNAPI subgraphs, the modelled
estimate table, and the run's differential result with a timeline of the mock's modelled
execution traces.

The page is built here, with the timeline and the tables; the graph's layout and SVG are in
:mod:`.report_graph`, the stylesheet, script and shared text helpers in :mod:`.report_assets`.
:func:`write_report` writes the page; :func:`timeline_from_traces`, :func:`format_speedup`,
:func:`format_seconds` and ``_format_us`` are the helpers the CLI uses for its own output.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence, Set
from typing import Any

from .layerwise import (
    error_text,
    node_text,
    operators_text,
    shown_rows,
    tolerance_text,
    verdict_text,
)
from .report_assets import CSS, SCRIPT, _e, _format_number, _shorten
from .report_graph import (
    NNAPI_COLOUR,
    NODE_HEIGHT,
    NODE_WIDTH,
    _legend,
    device_colours,
    graph_svg,
    layout,
)
from .run import output_facts, output_tolerance_text


def _format_us(micros: float | None) -> str:
    if micros is None:
        return "n/a"
    if micros >= 1e6:
        return f"{micros / 1e6:.3f} s"
    if micros >= 1e3:
        return f"{micros / 1e3:.3f} ms"
    return f"{micros:.1f} µs"


def format_seconds(seconds: float) -> str:
    """A measured duration in the unit that suits it (s, ms or µs, as ``_format_us``), never
    rounded to ``0.000 s``."""
    return _format_us(seconds * 1e6)


def format_speedup(ratio: float | None) -> str:
    """A speedup with two decimals, or three significant digits below 0.01 (0.00312x, never
    0.00x); n/a when unknown."""
    if ratio is None or not ratio:
        return "n/a"
    return f"{ratio:.2f}x" if ratio >= 0.01 else f"{ratio:.3g}x"


def _shapes_text(shapes: dict[str, int] | None) -> str:
    return ",".join(f"{k}={v}" for k, v in (shapes or {}).items()) or "static"


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
            _e(f"{o['max_error_steps']:.2f}" if o.get("max_error_steps") is not None else "—"),
            _e(output_tolerance_text(o["tolerance"], o.get("precision") or o["dtype"])),
            '<span class="pass">pass</span>' if o["passed"] else '<span class="fail">FAIL</span>',
        ]
        for o in run["outputs"]
    ]
    measured = run.get("measured_seconds", {})
    modelled = run.get("modelled", {})
    target = run.get("target", "mock")
    remote = target != "mock"
    facts = [
        ["target", _e(target if remote else "mock (this process)")],
        ["NNAPI library", _e(run["nnapi_library"])],
        ["device profile", _e(run["profile"])],
        ["NNAPI devices chosen", _e(_device_choice(run.get("device_choice")))],
        *[[_e(what), _e(value)] for what, value in output_facts(run)],
        [
            "NNAPI really ran",
            _e(
                f"{run['nnapi_ran']} ({run['nnapi_executions']} executions, "
                f"{run['nnapi_operations_executed']} operations)"
            ),
        ],
        *[
            [_e(f"{name.replace('_', ' ')} (measured on this host)"), _e(format_seconds(value))]
            for name, value in measured.items()
        ],
    ]
    if remote:
        facts += _target_facts(run.get("target_stats", {}), run.get("measured_on_target", {}))
    else:
        facts.append(
            [
                'NNAPI executions <span class="modelled">MODELLED</span>',
                _e(_format_us(modelled.get("nnapi_total_us"))),
            ]
        )
    where = _e(target) if remote else "the mock NNAPI"
    parts = [
        f"<section><h2>Run on {where} vs the host llvm build</h2>",
        _table(
            [
                "output",
                "shape",
                "dtype",
                "max abs error",
                "max rel error",
                "max error in quantization steps",
                "tolerance",
                "result",
            ],
            rows,
            {3, 4, 5, 6},
        ),
        "<br>",
        _table(["", ""], facts),
        '<p class="note">Wall-clock times "on this host" are measured on this machine (for a '
        "remote target: around the RPC calls, round trips included); where NNAPI is the mock, it "
        "computes with reference kernels and they say nothing about a phone. Times measured on "
        "the target come from its NNAPI runtime module. Modelled times come from the cost model "
        "of the profile.</p>",
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


def _target_facts(stats: dict[str, Any], measured: dict[str, Any]) -> list[list[str]]:
    """Rows of what a remote target's runtime reported for the kept call."""
    rows = [
        [
            "NNAPI subgraph calls / host fallbacks / compilations / cache hits (the target's "
            "runtime)",
            _e(
                f"{stats.get('nnapi_calls', 0)} / {stats.get('host_calls', 0)} / "
                f"{stats.get('compilations', 0)} / {stats.get('cache_hits', 0)}"
            ),
        ]
    ]
    if measured:
        label = '<span class="measured">MEASURED on the target</span>'
        rows.append(
            [f"NNAPI executions' wall clock {label}", _e(f"{measured['nnapi_execute_ms']:.3f} ms")]
        )
        for key, name in (
            ("getduration_in_driver_ms", "getDuration in driver"),
            ("getduration_on_hardware_ms", "getDuration on hardware"),
        ):
            if measured.get(key) is not None:
                rows.append([f"{name} {label}", _e(f"{measured[key]:.3f} ms")])
    return rows


def _verdict(passed: bool) -> str:
    return '<span class="pass">pass</span>' if passed else '<span class="fail">FAIL</span>'


def _layerwise_section(layers: dict[str, Any]) -> str:
    """--layerwise: the verdict and every row, in execution order (the texts the terminal
    prints: :mod:`.layerwise`)."""
    rows = layers.get("rows", [])
    first = layers.get("first_divergence")
    table = _table(
        ["model node", "subgraph", "call", "Relax", "NNAPI", "max abs error",
         "max error (rel / steps)", "tolerance", "result"],
        [
            [
                f"<code>{_e(node_text(r))}</code>",
                f"<code>{_e(r['subgraph'])}</code>",
                _e(r["call_index"]),
                _e(operators_text(r)),
                _e(", ".join(r["nnapi_operations"])),
                _e(f"{r['max_abs_error']:.3e}"),
                _e(error_text(r)),
                _e(tolerance_text(r)),
                _verdict(r["passed"]),
            ]
            for r in shown_rows(layers, None)
        ],
        {5, 6, 7},
    )  # fmt: skip
    verdict = _e(verdict_text(layers)[:1].upper() + verdict_text(layers)[1:]) + "."
    if first is not None:
        verdict += " Its node is outlined in red in the graph."
    return (
        "<h2>Layer-wise comparison</h2>"
        '<p class="note">Each NNAPI operator against the host computation of the same operator, '
        f"on the inputs the host computes for its subgraph ({_e(layers.get('precision'))}); "
        f"all {len(rows)} operators, in execution order. {verdict}</p>{table}"
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
        f"<title>{_e(title)}</title><style>{CSS}</style></head>"
        f"<body data-report='{_e(data)}'>{header}<main>{''.join(sections)}</main>"
        f"<script>{SCRIPT}</script></body></html>\n"
    )


def write_report(path: str, document: dict[str, Any]) -> None:
    with open(path, "w", encoding="utf-8") as file:
        file.write(render_html(document))


# NODE_WIDTH, NODE_HEIGHT, graph_svg and layout are :mod:`.report_graph`'s, importable from here.
__all__ = [
    "NODE_HEIGHT",
    "NODE_WIDTH",
    "format_seconds",
    "format_speedup",
    "graph_svg",
    "layout",
    "render_html",
    "timeline_from_traces",
    "write_report",
]
