# SPDX-License-Identifier: Apache-2.0
"""Checks (or with --fix adds) the SPDX license line at the top of every source file.

Every C/C++, Python, shell and CMake file of the tree (tracked, or new and not ignored) starts
with ``SPDX-License-Identifier: Apache-2.0`` in its comment syntax (after a ``#!`` line where
there is one). Run by ``tox -e lint`` and pre-commit.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LICENSE = "SPDX-License-Identifier: Apache-2.0"
COMMENT = {
    ".py": "#",
    ".sh": "#",
    ".cmake": "#",
    ".txt": "#",
    ".c": "//",
    ".cc": "//",
    ".h": "//",
    ".inc": "//",
}


def source_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    files = []
    for name in listed:
        path = Path(name)
        if path.suffix == ".txt" and path.name != "CMakeLists.txt":
            continue
        if path.suffix in COMMENT and (ROOT / path).is_file():
            files.append(path)
    return files


def header_line(path: Path) -> str:
    return f"{COMMENT[path.suffix]} {LICENSE}\n"


def has_header(lines: list[str]) -> bool:
    start = 1 if lines and lines[0].startswith("#!") else 0
    return len(lines) > start and LICENSE in lines[start]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fix", action="store_true", help="add the line where it is missing")
    args = parser.parse_args(argv)
    missing = []
    for path in source_files():
        text = (ROOT / path).read_text()
        lines = text.splitlines(keepends=True)
        if has_header(lines):
            continue
        if not args.fix:
            missing.append(path)
            continue
        start = 1 if lines and lines[0].startswith("#!") else 0
        lines.insert(start, header_line(path))
        (ROOT / path).write_text("".join(lines))
    for path in missing:
        line = header_line(path).strip()
        print(f"{path}: first line must be '{line}' (python scripts/check_spdx.py --fix adds it)")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
