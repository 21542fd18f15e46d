# SPDX-License-Identifier: Apache-2.0
"""``tvm-nnapi devices``: the NNAPI devices, their types, feature levels and what each supports."""

from __future__ import annotations

import argparse
from typing import Any

from .common import (
    EXIT_BAD_INPUT,
    JSON_SCHEMA,
    console,
    error,
    one_line,
    select_profile,
    selected_profile,
)


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


def cmd_devices(args: argparse.Namespace) -> int:
    """List the NNAPI devices: name, type, version, feature level and, for the mock, the
    operations each device supports in the selected device profile."""
    import json

    from rich.table import Table

    from mock_nnapi import NnapiError

    try:
        selected_profile(args.profile)
        document = devices_document(args.profile)
    except NnapiError as failure:
        error(f"--profile {args.profile}: {one_line(str(failure))}")
        return EXIT_BAD_INPUT
    if args.json:
        print(json.dumps(document, indent=2))
        return 0
    profile = f", profile {document['profile']}" if document["profile"] else ""
    table = Table(title=f"NNAPI devices ({document['library']}{profile})")
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
    return 0


def register(commands: Any) -> None:
    """Adds ``devices`` to the ``tvm-nnapi`` subcommands."""
    devices = commands.add_parser(
        "devices",
        help="list NNAPI devices, types, feature levels and supported operations",
        description=cmd_devices.__doc__,
    )
    devices.add_argument(
        "--profile", metavar="P", help="mock device profile (name or .json path) to list"
    )
    devices.add_argument("--json", action="store_true", help="print JSON on stdout")
    devices.set_defaults(handler=cmd_devices)
