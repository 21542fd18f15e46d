# SPDX-License-Identifier: Apache-2.0
"""The ``tvm-nnapi`` command line (also ``python -m tvm_nnapi``); docs/cli.md documents it.

Subcommands (one module each in :mod:`tvm_nnapi.commands`):
  demo      partition a built-in model, run it on the mock NNAPI, compare with host llvm
  devices   list the NNAPI devices (the mock's profile, or a real NNAPI's), their types, feature
            levels and supported operations
  models    list the built-in MODEL names
  explain   which operators go to NNAPI (as which NNAPI operations) and why others do not
  estimate  modelled latency of the NNAPI-offloaded program vs the all-host one on a profile
  run       build, run on the mock NNAPI, compare with host llvm, write a Perfetto trace
  llm       generate text with an LLM, benchmark its NNAPI-offloaded build
  compare-reports  compare two differential test reports (tvm_nnapi/testing/difftest.py)
  calibrate, measure  fit a device profile to measured timings; time workloads through NNAPI

explain, estimate and run take ``--json`` (a machine-readable document on stdout) and
``--report out.html`` (a self-contained HTML page). Progress goes to stderr.
"""

from __future__ import annotations

import sys

from .commands import build_parser, main

__all__ = ["build_parser", "main"]

if __name__ == "__main__":
    sys.exit(main())
