# SPDX-License-Identifier: Apache-2.0
"""``tvm-nnapi devices``: the NNAPI devices, their types, feature levels and what each supports."""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import UsageError
from .common import (
    EXIT_BAD_INPUT,
    JSON_SCHEMA,
    Progress,
    add_target_argument,
    check_output_paths,
    console,
    error,
    one_line,
    open_command_target,
    select_profile,
    selected_profile,
)

#: The profile whose devices lend cost-model parameters to a probed profile by default.
DEFAULT_BASE_PROFILE = "snapdragon-8-gen-2"


def _device_support(device: dict[str, Any]) -> str:
    support = device.get("support", {})
    operations = support.get("operations", "all")
    text = (
        "all operations the mock implements"
        if operations == "all"
        else ", ".join(sorted(operations))
    )
    if support.get("exclude_operations"):
        text += " except " + ", ".join(sorted(support["exclude_operations"]))
    types = support.get("data_types", "all")
    text += f"; data types: {'all' if types == 'all' else ', '.join(types)}"
    if "max_rank" in support:
        text += f"; rank <= {support['max_rank']}"
    return text


def devices_document(profile: str | None = None) -> dict[str, Any]:
    """The NNAPI devices (and, for the mock, what each supports according to its profile)."""
    import mock_nnapi
    import tvm_nnapi
    from mock_nnapi import control

    library = tvm_nnapi.configure_nnapi_library()
    active = select_profile(profile)
    described: dict[str, dict[str, Any]] = {}
    performance: dict[str, Any] = {}
    if active is not None:
        described = {d["name"]: d for d in control.profile().get("devices", [])}
        performance = control.device_performance()
    devices = []
    for index, device in enumerate(mock_nnapi.devices()):
        entry = {
            "index": index,
            "name": device.name,
            "type": mock_nnapi.DeviceTypeCode(device.type).name,
            "version": device.version,
            "feature_level": device.feature_level,
        }
        if device.name in described:
            entry["support"] = described[device.name].get("support", {})
            entry["modelled_performance"] = performance.get(device.name, {})
            entry["supported_operations"] = _device_support(described[device.name])
        else:
            entry["supported_operations"] = (
                "not listed: a real NNAPI answers per model (getSupportedOperationsForDevices)"
            )
        devices.append(entry)
    return {
        "schema": JSON_SCHEMA,
        "command": "devices",
        "library": library,
        "profile": active,
        "devices": devices,
    }


def target_devices_document(target: Any) -> dict[str, Any]:
    """The NNAPI devices of a target as its NNAPI library enumerates them."""
    from ..tools.device_probe import DEVICE_TYPES

    info = target.nnapi_devices()
    devices = [
        {
            "index": device["index"],
            "name": device["name"],
            "type": DEVICE_TYPES.get(int(device["type"]), str(device["type"])),
            "version": device["version"],
            "feature_level": device["feature_level"],
            "supported_operations": "not probed (--probe or --write-profile asks NNAPI)",
        }
        for device in info["devices"]
    ]
    return {
        "schema": JSON_SCHEMA,
        "command": "devices",
        "target": target.describe(),
        "library": info["library"],
        "mock": info["mock"],
        "runtime_feature_level": info["feature_level"],
        "profile": None,
        "devices": devices,
    }


def _probe(args: argparse.Namespace, target: Any, document: dict[str, Any]) -> None:
    """Probes the target's devices (device_probe) into the document; writes the profile."""
    from mock_nnapi.device_profiles import load_profile

    from ..tools.device_probe import probe_support, profile_from_probe, write_profile

    with Progress(bool(args.json)) as progress:
        support, probes, skipped = probe_support(target, progress)
    operations = sorted({op for probe in probes for op, _ in probe.operations})
    for device in document["devices"]:
        probed = support.get(device["name"])
        if probed is None:
            continue
        device["probed"] = {
            "supported": {op: sorted(types) for op, types in sorted(probed.supported.items())},
            "refused": {op: sorted(types) for op, types in sorted(probed.refused.items())},
        }
        device["supported_operations"] = (
            f"{len(probed.supported)} of {len(operations)} probed operations: "
            + (", ".join(probed.operations()) or "none")
        )
    document["probe"] = {"graphs": len(probes), "operations": operations, "skipped": skipped}
    if args.write_profile:
        info = target.nnapi_devices()
        name = args.name or f"probed-{document.get('target', 'mock').split()[0]}"
        profile = profile_from_probe(
            info,
            support,
            load_profile(args.base_profile),
            name,
            document.get("target", "the mock"),
            skipped,
        )
        write_profile(profile, args.write_profile)
        document["written_profile"] = args.write_profile


def cmd_devices(args: argparse.Namespace) -> int:
    """List the NNAPI devices of a target: name, type, version, feature level and what each
    supports: for the mock, its profile's support; with --probe or --write-profile, what the
    target's NNAPI answers for this backend's probe graphs (getSupportedOperationsForDevices).
    --write-profile writes that as a device profile (real devices and support; cost-model
    parameters defaults from --base-profile until calibrated) for explain/estimate/run
    --profile on the mock."""
    import json

    from rich.table import Table

    from mock_nnapi import NnapiError

    target = None
    try:
        check_output_paths(args)
        if args.write_profile and not args.write_profile.endswith(".json"):
            raise UsageError(f"--write-profile {args.write_profile}: give a .json file name")
        if args.target == "mock":
            selected_profile(args.profile)
            document = devices_document(args.profile)
            document["target"] = "mock (this process)"
            if args.probe or args.write_profile:
                from ..targets import MockTarget

                _probe(args, MockTarget(), document)
        else:
            target = open_command_target(args)
            document = target_devices_document(target)
            if args.probe or args.write_profile:
                _probe(args, target, document)
    except NnapiError as failure:
        error(f"--profile {args.profile}: {one_line(str(failure))}")
        return EXIT_BAD_INPUT
    finally:
        if target is not None:
            target.close()
    if args.json:
        print(json.dumps(document, indent=2))
        return 0
    profile = f", profile {document['profile']}" if document["profile"] else ""
    table = Table(title=f"NNAPI devices of {document['target']} ({document['library']}{profile})")
    for column in ("#", "name", "type", "version", "feature level", "supported operations"):
        table.add_column(column, overflow="fold")
    for device in document["devices"]:
        table.add_row(
            str(device["index"]),
            device["name"],
            device["type"],
            device["version"],
            str(device["feature_level"]),
            device["supported_operations"],
        )
    console().print(table)
    if document.get("written_profile"):
        print(
            f"profile: {document['written_profile']} (devices and support probed; cost-model "
            f"parameters defaults from {args.base_profile} until calibrated)"
        )
    return 0


def register(commands: Any) -> None:
    """Adds ``devices`` to the ``tvm-nnapi`` subcommands."""
    devices = commands.add_parser(
        "devices",
        help="list NNAPI devices, types, feature levels and supported operations",
        description=cmd_devices.__doc__,
    )
    devices.add_argument(
        "--profile",
        metavar="P",
        help="mock device profile (name or .json path) to list (mock; rpc on loopback)",
    )
    add_target_argument(devices)
    devices.add_argument(
        "--probe",
        action="store_true",
        help="ask the target's NNAPI which of this backend's probe graphs each device supports",
    )
    devices.add_argument(
        "--write-profile",
        metavar="OUT.json",
        help="probe, then write a device profile of the target (its devices and their support; "
        "cost-model parameters defaults until calibrated) for --profile on the mock",
    )
    devices.add_argument(
        "--base-profile",
        default=DEFAULT_BASE_PROFILE,
        metavar="P",
        help="profile whose devices (of the same type) lend the cost-model parameters of "
        f"--write-profile (default {DEFAULT_BASE_PROFILE})",
    )
    devices.add_argument("--name", help="name of the written profile (default probed-TARGET)")
    devices.add_argument("--json", action="store_true", help="print JSON on stdout")
    devices.set_defaults(handler=cmd_devices)
