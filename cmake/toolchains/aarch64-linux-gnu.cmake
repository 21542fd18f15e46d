# SPDX-License-Identifier: Apache-2.0
# CMake toolchain file: 64-bit ARM Linux (glibc) with Debian's cross compilers
# (apt-get install g++-aarch64-linux-gnu). Used by scripts/cross_build.sh for the emulated ARM64
# device (emulator/arm64_device.py, docs/targets.md); the Android build passes the NDK's
# android.toolchain.cmake to the same script instead.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(TVM_NNAPI_CROSS_PREFIX "aarch64-linux-gnu-" CACHE STRING "Prefix of the cross compilers")
set(CMAKE_C_COMPILER "${TVM_NNAPI_CROSS_PREFIX}gcc")
set(CMAKE_CXX_COMPILER "${TVM_NNAPI_CROSS_PREFIX}g++")

# Libraries and headers of the target come from the cross toolchain's sysroot (and from the
# prefixes given explicitly); programs (python, cmake helpers) from the host.
set(CMAKE_FIND_ROOT_PATH "/usr/aarch64-linux-gnu")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
