#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Cross-builds tvm-ffi and this project's C++ libraries for another machine with one CMake
# toolchain file: the path shared by the Android build (scripts/build_android.sh, the NDK's
# android.toolchain.cmake) and the emulated ARM64 Linux device (emulator/arm64_device.py,
# cmake/toolchains/aarch64-linux-gnu.cmake).
#
#   scripts/cross_build.sh --toolchain FILE --build-dir DIR [--tvm-ffi-root DIR] [--openblas DIR]
#                        [--tests] [--dry-run] [-- CMAKE_ARGS...]
#
#   --toolchain FILE  the CMake toolchain file of the target
#   --build-dir DIR   where to build; the result is DIR/install
#   --tvm-ffi-root DIR
#                     use a tvm-ffi already built for the target (lib/libtvm_ffi.so, include/;
#                     e.g. the tvm_ffi package of the target's apache-tvm-ffi wheel) instead of
#                     building it from the source distribution (step 1)
#   --openblas DIR    also build the mock NNAPI (libneuralnetworks.so) against the scipy_openblas32
#                     package directory DIR of a wheel for the target (include/, lib/); without
#                     it the mock is not built (phones have their own libneuralnetworks.so)
#   --tests           also build the runtime's native test program (runtime_leak_check)
#   --dry-run         print the commands instead of running them
#   CMAKE_ARGS        added to every CMake configuration (e.g. -DANDROID_ABI=arm64-v8a)
#
# Needs python with pip, cmake and ninja (the development venv has them). Steps:
#   1. unless --tvm-ffi-root: tvm-ffi from the apache-tvm-ffi source distribution (the version
#      installed in this Python), built with CMake: DIR/install/lib/libtvm_ffi.so and its headers;
#   2. libtvm_nnapi_runtime.so (tvm_nnapi/runtime) against that tvm-ffi, with --openblas the
#      mock, with --tests runtime_leak_check: DIR/install/lib/*.so, DIR/install/bin/.
set -euo pipefail

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e '/SPDX-License-Identifier/d' -e 's/^# \{0,1\}//'
}

fail() {
  echo "cross_build.sh: $*" >&2
  exit 2
}

repo="$(cd "$(dirname "$0")/.." && pwd)"
toolchain=""
build_dir=""
openblas=""
ffi_root=""
tests=0
dry_run=0
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --toolchain) [ $# -ge 2 ] || fail "--toolchain needs a file"; toolchain="$2"; shift 2 ;;
    --build-dir) [ $# -ge 2 ] || fail "--build-dir needs a directory"; build_dir="$2"; shift 2 ;;
    --tvm-ffi-root) [ $# -ge 2 ] || fail "--tvm-ffi-root needs a directory"; ffi_root="$2"; shift 2 ;;
    --openblas) [ $# -ge 2 ] || fail "--openblas needs a directory"; openblas="$2"; shift 2 ;;
    --tests) tests=1; shift ;;
    --dry-run) dry_run=1; shift ;;
    --) shift; extra=("$@"); break ;;
    *) fail "unknown argument $1 (see --help)" ;;
  esac
done
[ -n "$toolchain" ] || fail "give the CMake toolchain file: --toolchain FILE (see --help)"
[ -f "$toolchain" ] || fail "toolchain file $toolchain not found"
toolchain="$(cd "$(dirname "$toolchain")" && pwd)/$(basename "$toolchain")"
[ -n "$build_dir" ] || fail "give the build directory: --build-dir DIR"
if [ -n "$ffi_root" ] && [ "$dry_run" = 0 ] && [ ! -f "$ffi_root/lib/libtvm_ffi.so" ]; then
  fail "--tvm-ffi-root $ffi_root has no lib/libtvm_ffi.so"
fi
if [ -n "$openblas" ] && [ "$dry_run" = 0 ] && [ ! -f "$openblas/lib/libscipy_openblas.so" ]; then
  fail "--openblas $openblas has no lib/libscipy_openblas.so (a scipy_openblas32 package directory)"
fi

python="${PYTHON:-python3}"
prefix="$build_dir/install"
cross_cmake=(
  -G Ninja
  -DCMAKE_TOOLCHAIN_FILE="$toolchain"
  "${extra[@]}"
  -DCMAKE_BUILD_TYPE=Release
)

run() {
  echo "+ $*"
  if [ "$dry_run" = 0 ]; then "$@"; fi
}

# 1. tvm-ffi from its source distribution (same version as the host's apache-tvm-ffi), unless
#    one built for the target is given.
if [ -z "$ffi_root" ]; then
  if [ "$dry_run" = 0 ]; then
    ffi_version="$("$python" -c 'import importlib.metadata as m; print(m.version("apache-tvm-ffi"))')"
  else
    ffi_version="$("$python" -c 'import importlib.metadata as m; print(m.version("apache-tvm-ffi"))' 2>/dev/null || echo VERSION)"
  fi
  run mkdir -p "$build_dir/src"
  ffi_archive="$build_dir/src/apache_tvm_ffi-$ffi_version.tar.gz"
  ffi_source="$build_dir/src/apache_tvm_ffi-$ffi_version"
  if [ ! -f "$ffi_archive" ]; then
    run "$python" -m pip download --no-deps --no-binary apache-tvm-ffi \
      "apache-tvm-ffi==$ffi_version" -d "$build_dir/src"
  fi
  if [ ! -f "$ffi_source/CMakeLists.txt" ]; then
    run tar -xzf "$ffi_archive" -C "$build_dir/src"
  fi
  # libbacktrace is built with autotools and is not needed on the target (TVM's errors still
  # carry their messages); the Python module is host-only.
  run cmake -S "$ffi_source" -B "$build_dir/tvm-ffi" "${cross_cmake[@]}" \
    -DCMAKE_INSTALL_PREFIX="$prefix" -DTVM_FFI_USE_LIBBACKTRACE=OFF \
    -DTVM_FFI_BACKTRACE_ON_SEGFAULT=OFF -DTVM_FFI_BUILD_PYTHON_MODULE=OFF
  run cmake --build "$build_dir/tvm-ffi" --target tvm_ffi_shared
  run cmake --install "$build_dir/tvm-ffi" --component tvm_ffi
  ffi_root="$prefix"
fi

# 2. The runtime library (and the mock, and the native test program) against that tvm-ffi.
project_options=(-DTVM_NNAPI_TVM_FFI_ROOT="$ffi_root")
targets=(tvm_nnapi_runtime)
if [ -n "$openblas" ]; then
  project_options+=(-DTVM_NNAPI_BUILD_MOCK=ON -DTVM_NNAPI_OPENBLAS_DIR="$openblas")
  targets+=(neuralnetworks)
else
  project_options+=(-DTVM_NNAPI_BUILD_MOCK=OFF)
fi
if [ "$tests" = 1 ]; then
  project_options+=(-DTVM_NNAPI_BUILD_TESTS=ON)
  targets+=(runtime_leak_check)
fi
# CMake refuses a build directory configured from another source tree (another checkout sharing
# the cache, e.g. the arm64 device's): configure it afresh for this one.
runtime_cache="$build_dir/runtime/CMakeCache.txt"
if [ -f "$runtime_cache" ] && ! grep -qxF "CMAKE_HOME_DIRECTORY:INTERNAL=$repo" "$runtime_cache"; then
  echo "note: $build_dir/runtime was configured from another source tree; configuring it afresh"
  run rm -rf "$build_dir/runtime"
fi
run cmake -S "$repo" -B "$build_dir/runtime" "${cross_cmake[@]}" "${project_options[@]}" \
  -DPython_EXECUTABLE="$(command -v "$python" || echo "$python")" \
  -DCMAKE_INSTALL_PREFIX="$build_dir/runtime-install"
run cmake --build "$build_dir/runtime" --target "${targets[@]}"
run mkdir -p "$prefix/lib"
run cp "$build_dir/runtime/tvm_nnapi/runtime/libtvm_nnapi_runtime.so" "$prefix/lib/"
if [ -n "$openblas" ]; then
  run cp "$build_dir/runtime/mock_nnapi/libneuralnetworks.so" "$prefix/lib/"
fi
if [ "$tests" = 1 ]; then
  run mkdir -p "$prefix/bin"
  run cp "$build_dir/runtime/tvm_nnapi/runtime/runtime_leak_check" "$prefix/bin/"
fi
