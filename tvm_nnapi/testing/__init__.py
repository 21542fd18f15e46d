# SPDX-License-Identifier: Apache-2.0
"""Support for running the test suite on remote targets (phones, emulators, RPC servers).

- :mod:`tvm_nnapi.testing.android`: which phone a test worker uses (TVM RPC tracker or adb),
  NDK cross-compilation settings, and bringing up a TVM RPC server on a phone over adb.
- :mod:`tvm_nnapi.testing.modules`: small Relax modules the tests and the benchmarks build.
"""
