# SPDX-License-Identifier: Apache-2.0
"""Running the real ``tvm-nnapi`` command line in a fresh process, for the CLI tests: device
profiles, injected faults and the NNAPI library are per process."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap


def run_cli(
    *args: str,
    env: dict[str, str] | None = None,
    setup: str = "",
    columns: int = 250,
    check: bool = False,
) -> subprocess.CompletedProcess:
    """``tvm-nnapi ARGS`` (``python -m tvm_nnapi``) with output captured as text. ``setup`` is
    Python run in the same process before the command (e.g. arming a mock fault); ``env`` adds
    variables; ``columns`` is the terminal width the tables are laid out for; ``check`` asserts
    exit code 0 (the message shows stderr and stdout)."""
    if setup:
        program = "import sys\n" + textwrap.dedent(setup)
        program += "\nfrom tvm_nnapi.cli import main\nsys.exit(main(sys.argv[1:]))\n"
        command = [sys.executable, "-c", program, *args]
    else:
        command = [sys.executable, "-m", "tvm_nnapi", *args]
    completed = subprocess.run(
        command,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "COLUMNS": str(columns), **(env or {})},
    )
    if check:
        assert completed.returncode == 0, completed.stderr + completed.stdout
    return completed
