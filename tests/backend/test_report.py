# SPDX-License-Identifier: Apache-2.0
"""The --report HTML page: self-contained, graph layout, timeline, and rendering in headless
Chromium (scripts/check_report_html.sh)."""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tvm_nnapi.cli import main
from tvm_nnapi.tools.report import (
    NODE_HEIGHT,
    NODE_WIDTH,
    graph_svg,
    layout,
    render_html,
    timeline_from_traces,
)

CHECK_SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "check_report_html.sh"


def _chromium() -> str:
    for name in (os.environ.get("CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if name and shutil.which(name):
            return name
    pytest.skip(
        "rendering the report needs Chromium: install Debian's chromium (apt-get install "
        "chromium) or set CHROMIUM=/path/to/chrome"
    )


@pytest.fixture(scope="module")
def residual_run_document(tmp_path_factory) -> dict:
    """`run residual --json`: a model with two NNAPI subgraphs and a refused operator."""
    import contextlib
    import io

    directory = tmp_path_factory.mktemp("report")
    out = io.StringIO()
    args = ["run", "residual", "--shapes", "batch=3", "--trace", str(directory / "t.json")]
    with contextlib.redirect_stdout(out):
        assert main([*args, "--json"]) == 0
    return json.loads(out.getvalue())


def test_layout_places_every_node_once_without_overlap():
    # A chain of 100 operators with a skip connection every 5: one column, top to bottom.
    nodes = [{"id": i} for i in range(100)]
    edges = [(i, i + 1) for i in range(99)] + [(i, i + 5) for i in range(0, 95, 5)]
    positions, width, height = layout(nodes, edges)
    assert sorted(positions) == list(range(100))
    boxes = sorted(positions.values())
    assert len(set(boxes)) == 100
    for (x1, y1), (x2, y2) in itertools.pairwise(boxes):
        assert x1 != x2 or y2 - y1 >= NODE_HEIGHT  # same column: stacked, not overlapping
    assert height > width and len({x for x, _ in boxes}) == 1  # no horizontal scrolling
    assert all(0 <= x <= width - NODE_WIDTH and 0 <= y <= height for x, y in boxes)
    # A predecessor is above its successor.
    for source, target in edges:
        assert positions[target][1] > positions[source][1]


def test_skip_connections_are_routed_beside_the_chain():
    nodes = [{"id": i, "kind": "host", "label": f"op{i}"} for i in range(6)]
    edges = [(i, i + 1) for i in range(5)] + [(0, 4)]
    svg = graph_svg({"nodes": nodes, "edges": edges}, {})
    paths = re.findall(r'<path class="([^"]+)" d="([^"]+)"', svg)
    assert [cls for cls, _ in paths].count("edge skip") == 1
    skip = next(d for cls, d in paths if cls == "edge skip")
    xs = [float(v) for v in re.findall(r"[ MCL](-?[\d.]+),", skip)]
    # The skip edge leaves the column (x beyond the right edge of the nodes) on its way down.
    assert max(xs) > NODE_WIDTH


def test_layout_puts_parallel_branches_side_by_side():
    nodes = [{"id": i} for i in range(4)]
    positions, _, _ = layout(nodes, [(0, 1), (0, 2), (1, 3), (2, 3)])
    assert positions[1][1] == positions[2][1] and positions[1][0] != positions[2][0]
    assert positions[3][1] > positions[1][1]


def test_timeline_lays_executions_end_to_end():
    traces = [
        {
            "id": 1,
            "modelled_total_us": 10.0,
            "events": [
                {
                    "kind": "operation",
                    "name": "ADD",
                    "device": "npu",
                    "start_us": 2,
                    "duration_us": 3,
                }
            ],
        },
        {
            "id": 2,
            "modelled_total_us": 5.0,
            "events": [
                {
                    "kind": "operation",
                    "name": "MUL",
                    "device": "gpu",
                    "start_us": 1,
                    "duration_us": 4,
                }
            ],
        },
    ]
    timeline = timeline_from_traces(traces, ["first", "second"])
    assert timeline["modelled"] is True and timeline["total_us"] == 15.0
    operations = [e for e in timeline["events"] if e["kind"] == "operation"]
    assert [(e["lane"], e["start_us"], e["execution"]) for e in operations] == [
        ("npu", 2.0, "first"),
        ("gpu", 11.0, "second"),
    ]


def test_report_is_self_contained_and_has_every_section(residual_run_document):
    page = render_html(residual_run_document)
    assert page.startswith("<!DOCTYPE html>")
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    # Nothing to fetch: no external scripts, styles, images or links (the SVG namespace is an
    # identifier, never loaded).
    urls = set(re.findall(r"https?://[^\s\"'<>]+", page))
    assert urls <= {"http://www.w3.org/2000/svg"}
    assert not re.search(r"<(script|link|img|iframe)[^>]+(src|href)=", page)
    for heading in (
        "Partitioned graph",
        "Operators kept on the host",
        "NNAPI subgraphs",
        "Run on the mock NNAPI",
        "Timeline",
    ):
        assert heading in page
    assert 'aria-label="partitioned graph"' in page and 'aria-label="modelled timeline"' in page
    # The refused operator is drawn as a host node and listed with its reason.
    assert "relax.cumsum" in page and "no NNAPI pattern for relax.cumsum" in page
    assert "MODELLED" in page


def test_report_boxes_subgraph_calls_and_explains_the_timeline(residual_run_document):
    page = render_html(residual_run_document)
    # Every NNAPI subgraph call is outlined and named, without hovering.
    calls = residual_run_document["explain"]["graph"]["subgraph_calls"]
    assert page.count('class="subgraph-box"') == len(calls) == 2
    assert "main_nnapi_0 (call 0)" in page and "main_nnapi_1 (call 0)" in page
    # The timeline says what its colours and its axis mean.
    assert "timeline-legend" in page and "transfer between host and device memory" in page
    assert "operation on mock-reference" in page
    assert "time since the first execution started (MODELLED" in page


def test_report_groups_identical_refusals_and_prints_shapes_plainly(tmp_path):
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["explain", "llm:llama-2-7b", "--shapes", "seq_len=128", "--json"]) == 0
    document = json.loads(out.getvalue())
    assert len(document["explain"]["refusals"]) == 32  # one KV-cache attention per layer
    page = render_html(document)
    section = page[page.index("Operators kept on the host") :]
    section = section[: section.index("</table>")]
    assert section.count("<tr") == 2  # the header and one row for all 32 identical refusals
    assert "(32 in all)" in section
    estimate = {
        "profile": "tensor-g2",
        "entry": "main",
        "shapes": {"batch": 2, "seq_len": 8},
        "subgraphs": [],
        "totals": {},
    }
    estimate_page = render_html({**document, "estimate": estimate})
    assert "batch=2,seq_len=8" in estimate_page and "{&#x27;batch" not in estimate_page


def test_report_colours_operators_by_device(residual_run_document):
    graph = residual_run_document["explain"]["graph"]
    nnapi = [n for n in graph["nodes"] if n["kind"] == "nnapi"]
    host = [n for n in graph["nodes"] if n["kind"] == "host"]
    assert len(nnapi) == 4 and [n["label"] for n in host] == ["cumsum"]
    assert all(n["devices"] == ["mock-reference"] for n in nnapi)
    page = render_html(residual_run_document)
    svg = page[page.index('aria-label="partitioned graph"') :]
    svg = svg[: svg.index("</svg>")]
    svg = re.sub(r'<g class="subgraph-box".*?</g>', "", svg)  # the boxes around subgraph calls
    fills = re.findall(r'<rect [^>]*fill="(#[0-9a-f]{6})"', svg)
    assert len(fills) == len(graph["nodes"])
    assert len(set(fills)) == 3  # input, host, NNAPI on mock-reference
    assert "NNAPI on mock-reference" in page


def test_report_renders_an_estimate_table():
    document = {
        "schema": "tvm-nnapi.cli/1",
        "command": "estimate",
        "model": {"spec": "x", "entry": "main", "shapes": {}},
        "estimate": {
            "modelled": True,
            "profile": "tensor-g2",
            "entry": "main",
            "shapes": {},
            "subgraphs": [
                {
                    "name": "main_nnapi_0",
                    "calls": 2,
                    "devices": ["edgetpu"],
                    "flops": 2e9,
                    "modelled_nnapi_us": 100.0,
                    "modelled_host_us": 450.0,
                    "modelled_speedup": 4.5,
                }
            ],
            "host_rows": [
                {
                    "name": "relax.cumsum",
                    "kind": "operator",
                    "calls": 1,
                    "flops": 16,
                    "modelled_host_us": 3.0,
                    "modelled": True,
                }
            ],
            "totals": {
                "modelled_nnapi_program_us": 203.0,
                "modelled_host_program_us": 903.0,
                "modelled_speedup": 4.45,
            },
        },
    }
    page = render_html(document)
    assert "main_nnapi_0" in page and "edgetpu" in page and "4.50x" in page
    assert "203.0 µs" in page and "903.0 µs" in page and "relax.cumsum" in page


def test_report_renders_in_headless_chromium(residual_run_document, tmp_path):
    chromium = _chromium()
    report = tmp_path / "report.html"
    report.write_text(render_html(residual_run_document))
    screenshot = tmp_path / "report.png"
    completed = subprocess.run(
        ["bash", str(CHECK_SCRIPT), str(report), str(screenshot)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "CHROMIUM": chromium},
    )
    assert completed.returncode == 0, completed.stderr
    assert screenshot.stat().st_size > 10_000


def test_check_script_catches_a_broken_page(tmp_path):
    chromium = _chromium()
    broken = tmp_path / "broken.html"
    broken.write_text("<html><body><script>undefinedFunction();</script></body></html>")
    completed = subprocess.run(
        ["bash", str(CHECK_SCRIPT), str(broken)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "CHROMIUM": chromium},
    )
    assert completed.returncode == 1
    assert "undefinedFunction" in completed.stderr


def test_cli_writes_the_report_file(tmp_path, capsys):
    report = tmp_path / "explain.html"
    assert main(["explain", "residual", "--report", str(report)]) == 0
    assert f"report: {report}" in capsys.readouterr().out
    page = report.read_text()
    assert "tvm-nnapi explain: residual" in page and "Timeline" not in page


def test_node_labels_are_cut_between_operators_and_keep_the_compute_operator():
    from tvm_nnapi.tools.report_assets import _shorten, operator_label

    qdq_conv = ["relax.dequantize", "relax.dequantize", "relax.nn.conv2d", "relax.add"]
    qdq_conv += ["relax.nn.relu", "relax.quantize"]
    assert operator_label(qdq_conv, 22) == "q8 nn.conv2d + add …"
    assert operator_label(["relax.dequantize"], 22) == "dequantize"
    fused = ["relax.nn.conv2d", "relax.add", "relax.nn.relu"]
    assert operator_label(fused, 30) == "nn.conv2d + add + nn.relu"
    assert operator_label(fused, 22) == "nn.conv2d + add …"
    operations = "RESHAPE, CONV_2D, RESHAPE, DEQUANTIZE, QUANTIZE"
    assert _shorten(operations, 27, ", ") == "RESHAPE, CONV_2D, RESHAPE…"
    assert _shorten("a_name_without_any_break", 10) == "a_name_wi…"
    for width in range(8, 40):
        label = operator_label(qdq_conv, width)
        assert len(label) <= width and (label.endswith("…") or label.endswith("relu"))
