# SPDX-License-Identifier: Apache-2.0
"""What the partition knows of its target: NNAPI feature levels, the partition options of a
device profile (its runtime's feature level and the operations its devices support), and the
chosen devices' own answers (:class:`ChosenDevices`). Importing this module needs no TVM;
:func:`partition_options` and :class:`ChosenDevices` do."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mock_nnapi.constants import DeviceTypeCode, FeatureLevelCode, OperationCode

from ..compiler.graph_json import PROBE_DIMENSION

if TYPE_CHECKING:
    import tvm

    from ..compiler.patterns import CandidateKey, PartitionOptions

__all__ = ["FEATURE_LEVELS", "ChosenDevices", "feature_level_code", "partition_options"]


#: NNAPI feature levels 1-8 and the codes Android reports for them.
FEATURE_LEVELS = {level: int(FeatureLevelCode[f"FEATURE_LEVEL_{level}"]) for level in range(1, 9)}


def feature_level_code(value: int) -> int:
    """Android's code of an NNAPI feature level given as 1-8 or as the code; ValueError for
    anything else."""
    if value in FEATURE_LEVELS:
        return FEATURE_LEVELS[value]
    if value in FEATURE_LEVELS.values():
        return value
    raise ValueError(f"{value} is not an NNAPI feature level (1-8, or 27-31 / 1000006-1000008)")


@dataclass
class ChosenDevices:
    """The NNAPI devices every compilation targets (``--devices`` / ``--no-nnapi-cpu``, the
    runtime's ``devices`` / ``exclude_cpu``), as a partition's device oracle: each NNAPI subgraph
    is lowered and built on ``target``'s NNAPI library (this process's, the mock with the
    command's profile selected, by default), and ``getSupportedOperationsForDevices`` says which
    of its operations some chosen device runs, exactly as the compilation will."""

    devices: Sequence[str] = ()
    exclude_cpu: bool = False
    target: Any = None
    #: The mock profile to ask (selected for each question, then the previous one again);
    #: None: the active one. Only with the default target.
    profile: str | None = None

    def _target(self) -> Any:
        if self.target is None:
            from ..targets import MockTarget

            self.target = MockTarget()
        return self.target

    def chosen(self) -> list[str]:
        """The names of the chosen devices present on the target."""
        listed = self._target().nnapi_devices()["devices"]
        return [
            str(d["name"])
            for d in listed
            if (not self.devices or d["name"] in self.devices)
            and not (self.exclude_cpu and int(d["type"]) == DeviceTypeCode.CPU)
        ]

    def describe(self) -> str:
        text = ", ".join(self.devices) if self.devices else "every device"
        return text + (" without CPUs" if self.exclude_cpu else "")

    def refused_candidates(self, mod: tvm.IRModule) -> dict[CandidateKey, str]:
        if self.target is None and self.profile is not None:
            from mock_nnapi import control

            if control.profile_name() != self.profile:
                with control.Profile(self.profile):
                    return self._refused_candidates(mod)
        return self._refused_candidates(mod)

    def _refused_candidates(self, mod: tvm.IRModule) -> dict[CandidateKey, str]:
        from tvm import relax

        from ..compiler.codegen import lower_function
        from ..compiler.partition import CODEGEN_NAME
        from ..compiler.patterns import composite_key

        chosen = self.chosen()
        refused: dict[CandidateKey, str] = {}
        for _, func in mod.functions.items():
            if (getattr(func, "attrs", None) or {}).get("Codegen") != CODEGEN_NAME:
                continue
            spans: dict[relax.Var, tuple[relax.Function, range]] = {}
            builder = lower_function(func, spans=spans)
            shapes = probe_shapes(builder)
            if shapes is None:
                continue  # no sizes to build it at; the runtime names what it refuses
            answer = self._target().supported_operations(
                builder.to_json(), bytes(builder.constants), shapes
            )
            flags = [answer["devices"][name] for name in chosen if name in answer["devices"]]
            lacking = {
                index
                for index in range(len(builder.operations))
                if not any(f[index] for f in flags)
            }
            for composite, span in spans.values():
                missing = sorted(lacking.intersection(span))
                if not missing:
                    continue
                refused[composite_key(composite)] = self._reason(builder, missing)
        return refused

    def _reason(self, builder: Any, missing: Sequence[int]) -> str:
        lacked = []
        for index in missing:
            operation = builder.operations[index]
            first = builder.operands[operation.inputs[0]] if operation.inputs else None
            code = (
                int(OperationCode[operation.op])
                if operation.op in OperationCode.__members__
                else -1
            )
            text = f"{operation.op} (code {code})"
            if first is not None:
                rank = len(first.shape) if first.shape is not None else 0
                text += f" on {first.type}" + (
                    f" of rank {rank}" if first.shape is not None else ""
                )
            if text not in lacked:
                lacked.append(text)
        relaxed = " with relaxed float16" if builder.relax_fp32_to_fp16 else ""
        return (
            f"the chosen NNAPI devices ({self.describe()}) do not run {', '.join(lacked)}"
            f"{relaxed} (getSupportedOperationsForDevices)"
        )


def probe_shapes(builder: Any) -> list[list[int]] | None:
    """Input shapes of a lowered subgraph with every symbol at :data:`PROBE_DIMENSION` (None
    when a dimension would not be positive)."""
    return builder.input_shapes(PROBE_DIMENSION)


def partition_options(
    profile: str | None,
    feature_level: int | None = None,
    relax_fp16: bool = False,
    devices: Sequence[str] = (),
    exclude_cpu: bool = False,
    strategy: str = "all",
) -> PartitionOptions:
    """The partition options for a target: ``feature_level`` (a code), else the profile's
    runtime level, else 8; the operations the chosen devices of the profile support together
    (None when one of them runs everything, or without a profile); ``relax_fp16``. With
    ``devices`` or ``exclude_cpu`` (the devices every compilation targets), a
    :class:`ChosenDevices` oracle keeps on the host what those devices do not run (asking the
    mock with ``profile`` selected). A profile the mock has selected is read as the mock holds
    it, any other from its file. ``strategy``: ``all`` (every operator NNAPI can run) or
    ``cost`` (placed by modelled time on ``profile``, else the mock's active profile:
    :class:`tvm_nnapi.tools.cost_partition.CostOracle`)."""
    from mock_nnapi import control, device_profiles

    from ..compiler.patterns import PartitionOptions  # needs TVM

    level = feature_level
    supported = None
    if profile is not None:
        try:
            active = profile == control.profile_name()
        except control.MockOnlyError:
            active = False
        data = control.profile() if active else device_profiles.load_profile(profile)
        if level is None:
            level = feature_level_code(device_profiles.runtime_feature_level(data))
        if devices or exclude_cpu:
            data = dict(data)
            data["devices"] = [
                d
                for d in data.get("devices", [])
                if (not devices or d["name"] in devices)
                and not (exclude_cpu and d.get("type") == "CPU")
            ]
        supported = device_profiles.supported_operations(data)
    oracle = (
        ChosenDevices(tuple(devices), exclude_cpu, profile=profile)
        if devices or exclude_cpu
        else None
    )
    if strategy not in ("all", "cost"):
        raise ValueError(f"partition strategy {strategy!r}: choose all or cost")
    cost_oracle = None
    if strategy == "cost":
        from .cost_partition import CostOracle

        # What set_profile takes again: the file of a profile read from one.
        try:
            active = profile is None or profile == control.profile_name()
        except control.MockOnlyError:
            active = False
        cost_oracle = CostOracle(control.profile_selection() if active else str(profile))
    return PartitionOptions(
        feature_level=level if level is not None else FEATURE_LEVELS[8],
        supported_nnapi_ops=supported,
        relax_fp32_to_fp16=relax_fp16,
        device_oracle=oracle,
        strategy=strategy,
        cost_oracle=cost_oracle,
    )
