# SPDX-License-Identifier: Apache-2.0
"""The calibration tool (tvm_nnapi.tools.calibrate): measurement formats, the phone-side
measuring path, the re-timing of traces, and a fit that recovers known parameters."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mock_nnapi.device_profiles import load_profile

from mock_nnapi import control
from tvm_nnapi.cli import main
from tvm_nnapi.tools import calibrate, workloads
from tvm_nnapi.tools.calibrate import CalibrationError, Measurement

ROOT = Path(__file__).resolve().parents[2]
PUBLISHED = ROOT / "mock_nnapi" / "profiles" / "measurements" / "snapdragon-8-gen-2.csv"


def _row(**fields: Any) -> Measurement:
    base: dict[str, Any] = dict(
        id="r1", workload="mobilenet_v2", precision="float16", device="qti-dsp", measured=1.5
    )
    base.update(fields)
    return Measurement(**base)


def test_csv_and_json_hold_the_same_rows(tmp_path):
    rows = [
        _row(low=1.0, high=2.0, configuration='a, quoted "text"', source="somewhere"),
        _row(id="r2", workload="smollm2-1.7b-decode", precision="quant8", measured=30, unit="GB/s"),
        _row(id="r3", timing="in_driver", unit="us", measured=900),
    ]
    calibrate.write_measurements(tmp_path / "rows.csv", rows)
    calibrate.write_measurements(tmp_path / "rows.json", rows, {"phone": "test"})
    from_csv = calibrate.read_measurements(tmp_path / "rows.csv")
    from_json = calibrate.read_measurements(tmp_path / "rows.json")
    assert from_csv == from_json == rows
    document = json.loads((tmp_path / "rows.json").read_text())
    assert document["schema"] == calibrate.MEASUREMENTS_SCHEMA
    assert document["phone"] == "test"
    assert list(document["measurements"][0]) == list(calibrate.COLUMNS)
    header = (tmp_path / "rows.csv").read_text().splitlines()[0]
    assert header == ",".join(calibrate.COLUMNS)


def test_the_published_rows_load_with_their_sources():
    rows = calibrate.read_measurements(PUBLISHED)
    assert len(rows) == 29
    assert all(row.source for row in rows)
    assert {row.device for row in rows} == {"qti-dsp", "qti-gpu", "nnapi-reference"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("id,workload\nx,mobilenet_v2\n", "row x: missing precision, device, measured"),
        (
            "id,workload,precision,device,measured\nx,resnet,float16,cpu,1\n",
            "measurement 'x': unknown workload 'resnet'",
        ),
        (
            "id,workload,precision,device,measured,unit\nx,mobilenet_v2,float16,cpu,1,s\n",
            "unit 's' is not one of",
        ),
        (
            "id,workload,precision,device,measured\nx,mobilenet_v2,float16,cpu,-1\n",
            "measured must be > 0",
        ),
        ("id,workload,precision,device,measured,speed\nx,a,b,c,1,2\n", "unknown columns speed"),
    ],
)
def test_bad_rows_name_the_row(tmp_path, text, message):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(CalibrationError, match=message.replace("(", r"\(")):
        calibrate.read_measurements(path)


def test_a_json_document_needs_the_schema(tmp_path):
    path = tmp_path / "rows.json"
    path.write_text(json.dumps({"measurements": []}))
    with pytest.raises(CalibrationError, match=r"schema tvm_nnapi\.measurements/1"):
        calibrate.read_measurements(path)


SPECS = [
    ("mobilenet_v2", "float16", "qti-dsp"),
    ("mobilenet_v3_large", "float16", "qti-gpu"),
    ("smollm2-1.7b-decode", "quant8", "nnapi-reference"),
]


@pytest.mark.parametrize("timing", ["wall", "in_driver", "on_hardware"])
def test_retimed_traces_equal_the_mocks_modelled_times(timing):
    """At the profile's own values, the fit's equations give the mock's numbers."""
    rows = [
        _row(id=f"r{i}", workload=w, precision=p, device=d, timing=timing)
        for i, (w, p, d) in enumerate(SPECS)
    ]
    _, parameters, modelled = calibrate.model_rows("snapdragon-8-gen-2", rows)
    values = parameters.vector()
    for row in modelled:
        expected = {
            "wall": row.trace_total_us,
            "in_driver": row.trace_in_driver_us,
            "on_hardware": row.trace_on_hardware_us,
        }[timing]
        assert row.time_us(values) == pytest.approx(expected, rel=1e-9)


def test_measure_on_the_mock_writes_rows_calibrate_reads(tmp_path):
    """The phone path (tvm-nnapi measure) on the mock: getDuration reports the modelled
    in-driver time, and the JSON it writes reads back as calibration rows."""
    output = tmp_path / "phone.json"
    argv = ["measure", "mobilenet_v2:float16:qti-dsp", "--timing", "in_driver", "--repeats", "2"]
    argv += ["--profile", "snapdragon-8-gen-2", "-o", str(output)]
    assert main(argv) == 0
    (row,) = calibrate.read_measurements(output)
    assert (row.workload, row.precision, row.device, row.unit) == (
        "mobilenet_v2",
        "float16",
        "qti-dsp",
        "ms",
    )
    assert row.timing == "in_driver" and "modelled (mock_nnapi)" in row.configuration
    document = json.loads(output.read_text())
    assert document["mock"] is True and document["profile"] == "snapdragon-8-gen-2"
    (_, _, (modelled,)) = calibrate.model_rows("snapdragon-8-gen-2", [row])
    assert row.measured == pytest.approx(modelled.trace_in_driver_us / 1e3, rel=1e-6)
    # On the mock the wall column is the modelled total, not the host's clock.
    (timing,) = [calibrate.Timing(**t) for t in document["timings"]]
    assert timing.wall_us == pytest.approx(modelled.trace_total_us, rel=1e-9)
    assert timing.on_hardware_us == pytest.approx(modelled.trace_on_hardware_us, rel=1e-6)
    # The same rows as CSV read back identically.
    calibrate.write_measurements(tmp_path / "phone.csv", [row])
    assert calibrate.read_measurements(tmp_path / "phone.csv") == [row]


def test_measure_names_an_unknown_device(capsys):
    argv = ["measure", "mobilenet_v2:float16:no-such-npu", "-o", "/dev/null"]
    assert main([*argv, "--profile", "snapdragon-8-gen-2"]) == 2
    assert "no NNAPI device 'no-such-npu'" in capsys.readouterr().err


def test_measure_names_a_workload_with_an_impossible_context(capsys):
    argv = ["measure", "smollm2-1.7b-decode-ctx0:float16:qti-dsp", "-o", "/dev/null"]
    assert main([*argv, "--profile", "snapdragon-8-gen-2"]) == 2
    error = capsys.readouterr().err.splitlines()[-1]  # after the progress line
    assert error.startswith("tvm-nnapi measure: unknown workload 'smollm2-1.7b-decode-ctx0'")
    assert "MODEL-decode-ctxC" in error


def test_calibrate_cli_errors_are_one_line(tmp_path, capsys):
    assert main(["calibrate", "snapdragon-8-gen-2", str(tmp_path / "none.csv"), "-o", "x"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "none.csv: cannot read" in err


def test_calibrate_cli_writes_a_loadable_profile_and_the_table(tmp_path, capsys):
    rows = calibrate.read_measurements(PUBLISHED)[:2]
    calibrate.write_measurements(tmp_path / "rows.csv", rows)
    out = tmp_path / "cal.json"
    argv = ["calibrate", "snapdragon-8-gen-2", str(tmp_path / "rows.csv"), "-o", str(out)]
    assert main([*argv, "--name", "cal", "--report", str(tmp_path / "fit.md")]) == 0
    printed = capsys.readouterr().out
    assert "sd8g2-mobilenet-v2-npu" in printed and "modelled" in printed
    control.set_profile(str(out))
    assert control.profile_name() == "cal"
    assert "| sd8g2-mobilenet-v3-large-npu |" in (tmp_path / "fit.md").read_text()


def test_workload_weight_bytes_match_the_published_shapes():
    shape = workloads.LLM_SHAPES["smollm2-1.7b"]
    assert 1.6e9 < shape.weight_count() < 1.8e9
    assert workloads.build("mobilenet_v2", "float16").weight_bytes == pytest.approx(
        2 * 3.5e6, rel=0.02
    )


def _traced_bytes(name: str, precision: str) -> float:
    """The bytes a workload's operations read and write on the NPU of snapdragon-8-elite."""
    from mock_nnapi import api

    with control.Profile("snapdragon-8-elite"):
        workload = workloads.build(name, precision)
        npu = next(device for device in api.devices() if device.name == "qti-dsp")
        compilation = api.Compilation(workload.model, [npu]).finish()
        with control.CostOnlyExecution():
            compilation.execute(calibrate._zeros_like_inputs(workload.model))
        trace = control.last_execution_trace()
        assert trace is not None
        return float(trace["bytes"])


@pytest.mark.parametrize(
    ("precision", "bits", "positions"),
    [("float16", 0, 400), ("float16", 4, 1600), ("quant8", 4, 800), ("quant8", 8, 400)],
)
def test_a_decode_with_a_context_reads_its_kv_cache_once_per_layer(precision, bits, positions):
    """Each layer reads the whole cache (keys and values, 16-bit) once; with the phone's weight
    width given, the cache is scaled to stay as large against the workload's weights."""
    shape = workloads.LLM_SHAPES["smollm2-1.7b"]
    name = "smollm2-1.7b-decode-ctx400" + (f"-w{bits}" if bits else "")
    assert workloads.known(name)
    plain = _traced_bytes("smollm2-1.7b-decode", precision)
    cache = 2 * shape.layers * shape.kv * positions * 2  # keys and values, float16
    # Beyond the cache: the scores and their softmax (3% of it here) and q's copies.
    assert cache <= _traced_bytes(name, precision) - plain <= cache * 1.05
    assert workloads.build(name, precision).weight_bytes == pytest.approx(
        workloads.build("smollm2-1.7b-decode", precision).weight_bytes
    )


@pytest.mark.parametrize(
    "name",
    ["smollm2-1.7b-decode-ctx0", "smollm2-1.7b-decode-ctx64-w3", "gpt-9-decode-ctx64",
     "smollm2-1.7b-prefill256-ctx64"],
)  # fmt: skip
def test_unknown_contexts_are_named(name):
    assert not workloads.known(name)
    with pytest.raises(ValueError, match=r"unknown workload .*MODEL-decode-ctxC"):
        workloads.build(name, "float16")
    with pytest.raises(CalibrationError, match=f"unknown workload '{name}'"):
        Measurement("r", name, "float16", "qti-dsp", 1.0, "GB/s")


def test_the_calibrated_profile_reproduces_the_cpu_gpu_and_npu_rows_within_1_5x():
    """The first seven rows (one or two per device and phase; every row's error of fit is in
    mock_nnapi/profiles/measurements/summaries, checked by test_calibration_sets.py)."""
    rows = calibrate.read_measurements(PUBLISHED)[:7]
    _, parameters, modelled = calibrate.model_rows("snapdragon-8-gen-2", rows)
    values = parameters.vector()
    for row in modelled:
        ratio = row.value(values) / row.measurement.measured
        assert 1 / 1.5 <= ratio <= 1.5, (row.measurement.id, ratio)


@pytest.mark.parametrize("name", ["tensor-g2", "dimensity-9000"])
def test_uncalibrated_phones_carry_the_fitted_parameters_as_labelled_estimates(name):
    calibrated = load_profile("snapdragon-8-gen-2")
    profile = load_profile(name)
    like = {device["type"]: device for device in reversed(calibrated["devices"])}
    for i, device in enumerate(profile["devices"]):
        source = like[device["type"]]
        for key in calibrate.DERIVED_FIELDS:
            assert device.get(key) == source.get(key), (name, device["name"], key)
        fraction = source["memory_bandwidth_gbps"] / calibrated["soc"]["dram_peak_gbps"]
        assert device["memory_bandwidth_gbps"] == pytest.approx(
            fraction * profile["soc"]["dram_peak_gbps"]
        )
        cited = [s for s in profile["sources"] if f"devices[{i}].compute_efficiency" in s["fields"]]
        assert cited and all(s["estimate"] for s in cited)
        assert "carried over from the calibrated snapdragon-8-gen-2" in cited[0]["source"]


def test_derive_is_what_the_cli_does(tmp_path):
    out = tmp_path / "derived.json"
    argv = ["calibrate", "tensor-g2", "--derive-from", "snapdragon-8-gen-2", "-o", str(out)]
    assert main(argv) == 0
    derived = json.loads(out.read_text())
    expected = calibrate.derive(load_profile("snapdragon-8-gen-2"), load_profile("tensor-g2"))
    assert derived == expected
    control.set_profile(str(out))  # passes the mock's strict reader


def test_deriving_again_replaces_what_the_first_derivation_wrote():
    calibrated = load_profile("snapdragon-8-gen-2")
    once = calibrate.derive(calibrated, load_profile("dimensity-9000"))
    assert calibrate.derive(calibrated, once) == once


def test_calibration_imports_without_tvm():
    """Calibration, the cost model and the device profiles need no TVM (a process where
    ``import tvm`` fails)."""
    import subprocess
    import sys

    script = (
        "import sys; sys.modules['tvm'] = None\n"
        "import tvm_nnapi.tools.calibrate, tvm_nnapi.commands.calibrate\n"
        "import mock_nnapi.cost_model, mock_nnapi.device_profiles\n"
        "import tvm_nnapi\n"
        "try:\n"
        "    tvm_nnapi.build\n"
        "except ImportError as error:\n"
        "    print('refused:', error)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "refused: tvm_nnapi.build needs TVM" in done.stdout


def test_a_workload_as_graph_json_keeps_its_operands_and_constants():
    """workloads.model_graph: scalars and 1-D int32 values inline, other values in a 64-byte
    aligned blob; an all-zero blob is sent as its size only."""
    from mock_nnapi.api import ModelRecord
    from mock_nnapi.constants import OperandCode, OperationCode

    record = ModelRecord()
    x = record.add_tensor(OperandCode.TENSOR_FLOAT32, [2, 3])
    w = record.add_tensor(OperandCode.TENSOR_FLOAT32, [4, 3])
    record.set_value(w, np.arange(12, dtype=np.float32).reshape(4, 3))
    b = record.add_tensor(OperandCode.TENSOR_FLOAT32, [4])
    record.set_value(b, np.ones(4, np.float32))
    fuse = record.add_scalar(OperandCode.INT32, 0)
    shape = record.add_tensor(OperandCode.TENSOR_INT32, [2])
    record.set_value(shape, [4, 2])
    y = record.add_tensor(OperandCode.TENSOR_FLOAT32, [2, 4])
    z = record.add_tensor(OperandCode.TENSOR_FLOAT32, [4, 2])
    record.add_operation(OperationCode.FULLY_CONNECTED, [x, w, b, fuse], [y])
    record.add_operation(OperationCode.RESHAPE, [y, shape], [z])
    record.identify_inputs_and_outputs([x], [z])
    text, blob, size = workloads.model_graph(record, "probe")
    graph = json.loads(text)
    assert graph["format"] == "tvm-nnapi-graph" and graph["symbol"] == "probe"
    assert [op["op"] for op in graph["operations"]] == ["FULLY_CONNECTED", "RESHAPE"]
    assert graph["operands"][fuse] == {"type": "INT32", "value": 0}
    assert graph["operands"][shape]["value"] == [4, 2]
    weights, bias = graph["operands"][w]["constant"], graph["operands"][b]["constant"]
    assert weights == {"offset": 0, "nbytes": 48} and bias == {"offset": 64, "nbytes": 16}
    assert size == len(blob) == 80
    assert np.frombuffer(blob[:48], np.float32).tolist() == list(range(12))
    assert np.frombuffer(blob[64:], np.float32).tolist() == [1.0] * 4
    # Zero weights (the calibration workloads): no blob, only its size.
    _, blob, size = workloads.build("mobilenet_v2", "float16").graph()
    assert blob == b"" and size > 3_000_000


def test_a_per_channel_record_replays_on_the_library_and_as_graph_json():
    """A per-channel filter's scales travel with the record: ``build`` sets them on the NNAPI
    library, and graph JSON carries them as ``channel_quant``."""
    from mock_nnapi.constants import OperandCode, OperationCode

    from mock_nnapi import api

    record = api.ModelRecord()
    x = record.add_tensor(OperandCode.TENSOR_QUANT8_ASYMM, [1, 2, 2, 2], 0.5, 128)
    f = record.add_tensor(OperandCode.TENSOR_QUANT8_SYMM_PER_CHANNEL, [3, 1, 1, 2])
    record.set_channel_quant(f, 0, [0.25, 0.5, 1.0])
    record.set_value(f, np.array([[[[1, 1]]], [[[2, -1]]], [[[0, 3]]]], np.int8))
    b = record.add_tensor(OperandCode.TENSOR_INT32, [3])
    record.set_value(b, np.zeros(3, np.int32))
    scalars = [record.add_scalar(OperandCode.INT32, v) for v in (0, 0, 0, 0, 1, 1, 0)]
    y = record.add_tensor(OperandCode.TENSOR_QUANT8_ASYMM, [1, 2, 2, 3], 0.5, 128)
    record.add_operation(OperationCode.CONV_2D, [x, f, b, *scalars], [y])
    record.identify_inputs_and_outputs([x], [y])
    model = record.build()
    assert model.channel_quant[f][0] == 0
    assert model.channel_quant[f][1].tolist() == [0.25, 0.5, 1.0]
    inputs = np.full((1, 2, 2, 2), 130, np.uint8)  # 1.0 everywhere
    (out,) = api.Compilation(model).finish().execute([inputs])
    # Real outputs 0.5, 0.5 and 3.0, at scale 0.5 around 128.
    assert out[0, 0, 0].tolist() == [129, 129, 134]
    text, _, _ = workloads.model_graph(record, "per_channel")
    assert json.loads(text)["operands"][f]["channel_quant"] == {
        "channel_dim": 0,
        "scales": [0.25, 0.5, 1.0],
    }
