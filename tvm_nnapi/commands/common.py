# SPDX-License-Identifier: Apache-2.0
"""What every ``tvm-nnapi`` command shares: exit codes, the JSON document's schema name, argument
types, progress output, one-line errors, and selecting the mock's device profile."""

from __future__ import annotations

import argparse
import re
import sys
from typing import TYPE_CHECKING, Any, NoReturn

from ..errors import UsageError
from ..tools.partition_target import FEATURE_LEVELS, feature_level_code
from ..tools.partition_target import partition_options as _options_for_profile

if TYPE_CHECKING:
    from rich.console import Console
    from rich.status import Status

    from ..compiler.patterns import PartitionOptions

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_FAILED",
    "EXIT_MISMATCH",
    "FEATURE_LEVELS",
    "JSON_SCHEMA",
    "DebugSubparsers",
    "Progress",
    "add_relax_argument",
    "add_target_argument",
    "check_output_paths",
    "console",
    "device_choice_text",
    "error",
    "feature_level",
    "one_line",
    "open_command_target",
    "partition_options",
    "positive",
    "select_profile",
    "selected_profile",
    "user_error",
    "version",
]


def console() -> Console:
    """The terminal for a command's human-readable output (stdout)."""
    from rich.console import Console

    return Console()


# The JSON documents of explain/estimate/run (docs/cli.md).
JSON_SCHEMA = "tvm-nnapi.cli/1"

# Exit codes: 0 success, 1 a run's results differ from host llvm, 2 bad input (model, shapes,
# profile, options), 3 the tool failed while building or running.
EXIT_MISMATCH = 1


EXIT_BAD_INPUT = 2


EXIT_FAILED = 3


def feature_level(text: str) -> int:
    """An ``argparse`` type: an NNAPI feature level as 1-8 or Android's code, as the code."""
    try:
        return feature_level_code(int(text))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text} is not an NNAPI feature level (1-8, or 27-31 / 1000006-1000008)"
        ) from None


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return value


class Progress:
    """A rich status line on stderr while long steps run (silent with --json or --quiet)."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self._status: Status | None = None

    def __enter__(self) -> Progress:
        if not self.quiet:
            from rich.console import Console

            self._status = Console(stderr=True).status("starting...")
            self._status.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._status is not None:
            self._status.__exit__(*exc)
            self._status = None

    def __call__(self, message: str) -> None:
        if self._status is not None:
            self._status.update(message)


def error(message: str) -> None:
    """An error on stderr, unwrapped (file names and paths stay whole)."""
    print(f"error: {message}", file=sys.stderr)


def one_line(message: str) -> str:
    """An exception's text as one line, without C++ source locations (``device.cc:353:``) and
    TVM's traceback decorations."""

    lines = [line.strip() for line in str(message).splitlines() if line.strip()]
    lines = [line for line in lines if not line.startswith(("File ", "Traceback", "^"))]
    text = " ".join(lines) or type(message).__name__
    text = re.sub(r"(?<![\w./-])[\w./-]+\.(?:cc|cpp|h|hpp):\d+:\s*", "", text)
    if re.search(r"check failed: ", text, flags=re.IGNORECASE):
        # "F returned ANEURALNETWORKS_BAD_DATA (4): check failed: Load(...): the reason"
        text = re.sub(r"^.*?check failed: .*?\):\s*", "", text, flags=re.IGNORECASE)
    return text


def selected_profile(profile: str | None) -> str | None:
    """:func:`select_profile`, its errors as one line naming ``--profile`` (with the closest
    profile name); without ``--profile``, a ``MOCK_NNAPI_PROFILE`` the mock would reject is
    refused the same way (the mock alone would warn and run on its reference profile)."""
    from mock_nnapi import NnapiError

    if profile is None:
        _check_profile_environment()
    try:
        return select_profile(profile)
    except NnapiError as error:
        message = f"--profile {profile}: {one_line(str(error))}"
        raise UsageError(message + _profile_suggestion(str(profile))) from error


def _profile_suggestion(name: str) -> str:
    import difflib

    from mock_nnapi.device_profiles import available_profiles

    close = difflib.get_close_matches(name, available_profiles(), n=1, cutoff=0.5)
    return f"; did you mean {close[0]}?" if close else ""


def _check_profile_environment() -> None:
    import os

    from mock_nnapi.device_profiles import load_profile

    requested = os.environ.get("MOCK_NNAPI_PROFILE")
    if not requested:
        return
    try:
        load_profile(requested)
    except (OSError, ValueError) as error:
        message = f"MOCK_NNAPI_PROFILE={requested}: {one_line(str(error))}"
        raise UsageError(message + _profile_suggestion(requested)) from error


class SuggestingParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose "invalid choice" errors name the closest choice (a
    misspelt command, ``--partition`` value, ...). Its subcommand parsers are of this class
    too."""

    def error(self, message: str) -> NoReturn:
        import difflib

        found = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if found:
            choices = re.findall(r"'([^']*)'", found.group(2))
            close = difflib.get_close_matches(found.group(1), choices, n=1, cutoff=0.6)
            if close:
                message += f"; did you mean '{close[0]}'?"
        super().error(message)


def user_error(error: BaseException) -> str | None:
    """The one-line message of an error the user can fix (bad input), else None."""
    from tvm_nnapi.tools.sources import ModelLoadError

    if isinstance(error, UsageError | ModelLoadError):
        return one_line(str(error))
    if isinstance(error, OSError) and getattr(error, "filename", None):
        reason = error.strerror or str(error)
        return f"{error.filename}: {reason}"
    if isinstance(error, FileNotFoundError | IsADirectoryError | NotADirectoryError):
        return one_line(str(error))
    return None


def check_output_paths(args: argparse.Namespace) -> None:
    """Before any work: every output file the options name must be writable where it is."""
    import os

    for option in ("report", "trace", "result", "write_profile"):
        path = getattr(args, option, None)
        if not path or path == "-":
            continue
        directory = os.path.dirname(os.path.abspath(path))
        flag = f"--{option.replace('_', '-')} {path}"
        if os.path.isdir(path):
            raise UsageError(f"{flag}: is a directory; give a file name")
        if not os.path.isdir(directory):
            raise UsageError(
                f"{flag}: the directory {directory} does not exist; create it or write elsewhere"
            )
        if not os.access(directory, os.W_OK):
            raise UsageError(f"{flag}: the directory {directory} is not writable")


def select_profile(profile: str | None) -> str | None:
    """Select a mock device profile (None: keep the current one); returns the active name, or
    None when the NNAPI library is not the mock."""
    from mock_nnapi import control

    try:
        if profile is not None and profile != control.profile_name():
            control.set_profile(profile)
        return control.profile_name()
    except control.MockOnlyError:
        if profile is not None:
            raise
        return None


def partition_options(args: argparse.Namespace, profile: str | None) -> PartitionOptions:
    """The partition options of a command's ``--feature-level`` / ``--relax-fp16``, its device
    choice (``args.device_choice``: ``--devices`` / ``--no-nnapi-cpu``) and profile
    (:func:`tvm_nnapi.tools.partition_target.partition_options`)."""
    choice = getattr(args, "device_choice", None) or {}
    return _options_for_profile(
        profile,
        getattr(args, "feature_level", None),
        getattr(args, "relax_fp16", False),
        devices=tuple(choice.get("devices", ())),
        exclude_cpu=bool(choice.get("exclude_cpu", False)),
        strategy=getattr(args, "partition", "all") or "all",
    )


def device_choice_text(choice: dict[str, Any] | None) -> str:
    if choice is None:
        return "NNAPI chooses"
    text = ", ".join(choice["devices"]) or "all devices"
    return text + (" without CPUs" if choice["exclude_cpu"] else "")


def add_relax_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--relax-fp16",
        action="store_true",
        help="let NNAPI compute float32 subgraphs in float16 "
        "(ANeuralNetworksModel_relaxComputationFloat32toFloat16): devices that take float16 can "
        "run them, and the comparison uses float16 tolerances",
    )


class DebugSubparsers:
    """``add_subparsers()`` whose every subcommand (also those other modules add) accepts
    ``--debug`` after the command name."""

    def __init__(self, action: Any) -> None:
        self._action = action

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        sub = self._action.add_parser(name, **kwargs)
        sub.add_argument(
            "--debug",
            action="store_true",
            default=argparse.SUPPRESS,
            help="let errors through with their Python traceback",
        )
        original = sub.add_subparsers

        def add_subparsers(**options: Any) -> DebugSubparsers:
            return DebugSubparsers(original(**options))

        sub.add_subparsers = add_subparsers
        return sub


def version() -> str:
    import importlib.metadata

    try:
        return importlib.metadata.version("tvm-nnapi")
    except importlib.metadata.PackageNotFoundError:
        return "unknown (not installed)"


def add_target_argument(parser: argparse.ArgumentParser) -> None:
    """``--target mock|rpc|device`` (docs/targets.md)."""
    parser.add_argument(
        "--target",
        choices=("mock", "rpc", "device"),
        default="mock",
        help="where NNAPI runs: mock (this process, default), rpc (a TVM RPC server: "
        "TVM_NNAPI_RPC_SERVER=host:port, else one started on loopback with the mock), device "
        "(a phone through a TVM RPC tracker, TVM_TRACKER_HOST/TVM_TRACKER_PORT/RPC_DEVICE_KEY, "
        "or adb, TVM_NNAPI_ADB_SERIALS); docs/targets.md",
    )


_ARGS_PROFILE = object()


def open_command_target(args: argparse.Namespace, profile: Any = _ARGS_PROFILE) -> Any:
    """The ``--target`` of a command, opened; a target that cannot be reached is a UsageError
    naming the variables to set. ``profile`` (default: ``--profile``) with ``--target rpc`` and
    no server named selects the profile of the loopback server's mock."""
    import os

    from ..targets import RpcTarget, TargetUnavailableError, open_target

    name = getattr(args, "target", "mock")
    if profile is _ARGS_PROFILE:
        profile = getattr(args, "profile", None)
    if name == "device" and profile:
        raise UsageError(
            "--profile selects the mock's device profile; a device target has its own NNAPI "
            "devices (drop --profile, or use --target mock/rpc)"
        )
    if name == "rpc" and profile and os.environ.get("TVM_NNAPI_RPC_SERVER"):
        raise UsageError(
            f"--profile {profile}: the server named by TVM_NNAPI_RPC_SERVER runs its own NNAPI "
            "(start its mock with MOCK_NNAPI_PROFILE there, or drop --profile)"
        )
    try:
        if name == "rpc":
            return RpcTarget(profile=profile)
        return open_target(name)
    except TargetUnavailableError as failure:
        raise UsageError(f"--target {name}: {failure}") from failure
