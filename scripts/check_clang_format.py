# SPDX-License-Identifier: Apache-2.0
"""Fail if any C/C++ file of the project is not formatted with clang-format (repo .clang-format).

Usage: python scripts/check_clang_format.py [--fix]
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE_DIRS = ("mock_nnapi", "tvm_nnapi", "common", "tests", "emulator")
SUFFIXES = {".c", ".cc", ".h"}


def sources() -> list[Path]:
    files = []
    for directory in SOURCE_DIRS:
        for path in sorted((ROOT / directory).rglob("*")):
            if path.suffix in SUFFIXES and "build" not in path.relative_to(ROOT).parts:
                files.append(path)
    return files


def main() -> int:
    # Prefer the clang-format installed next to this interpreter (the pip wheel in a venv).
    local = Path(sys.executable).parent / "clang-format"
    clang_format = str(local) if local.exists() else shutil.which("clang-format")
    if clang_format is None:
        print("clang-format not found: pip install clang-format", file=sys.stderr)
        return 2
    fix = "--fix" in sys.argv[1:]
    files = [str(p) for p in sources()]
    command = [clang_format, "-i"] if fix else [clang_format, "--dry-run", "--Werror"]
    result = subprocess.run([*command, *files], cwd=ROOT, check=False)
    if result.returncode == 0:
        print(f"clang-format: {len(files)} files {'formatted' if fix else 'clean'}")
    else:
        print("clang-format: run `python scripts/check_clang_format.py --fix`", file=sys.stderr)
    return result.returncode


if __name__ == "__main__":
    sys.exit(main())
