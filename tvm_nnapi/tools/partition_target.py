# SPDX-License-Identifier: Apache-2.0
"""What the partition knows of its target: NNAPI feature levels, and the partition options of a
device profile (its runtime's feature level and the operations its devices support). Importing
this module needs no TVM; :func:`partition_options` does."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mock_nnapi.constants import FeatureLevelCode

if TYPE_CHECKING:
    from ..compiler.patterns import PartitionOptions

__all__ = ["FEATURE_LEVELS", "feature_level_code", "partition_options"]

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


def partition_options(
    profile: str | None, feature_level: int | None = None, relax_fp16: bool = False
) -> PartitionOptions:
    """The partition options for a target: ``feature_level`` (a code), else the profile's
    runtime level, else 8; the operations the profile's devices support together (None when one
    of them runs everything, or without a profile); ``relax_fp16``. A profile the mock has
    selected is read as the mock holds it, any other from its file."""
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
        supported = device_profiles.supported_operations(data)
    return PartitionOptions(
        feature_level=level if level is not None else FEATURE_LEVELS[8],
        supported_nnapi_ops=supported,
        relax_fp32_to_fp16=relax_fp16,
    )
