#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the tvm_nnapi runtime library for Android with the NDK's CMake toolchain.
#
#   scripts/build_android.sh ABI [--api LEVEL] [--build-dir DIR] [--tvm-source DIR] [--dry-run]
#
#   ABI             arm64-v8a (phones) or x86_64 (the emulator)
#   --api LEVEL     minimum Android API level (default 29: NNAPI device enumeration)
#   --build-dir DIR where to build (default build/android/ABI); the result is DIR/install
#   --tvm-source DIR
#                   also build TVM's runtime and its C++ RPC server (tvm_rpc) from a TVM source
#                   tree (0.27), which the adb path of the device and emulator targets pushes
#   --dry-run       print the commands instead of running them
#
# Needs ANDROID_NDK_HOME (or ANDROID_NDK_ROOT): an Android NDK r23 or newer, and python with
# pip, cmake and ninja (the development venv has them). Steps 1 and 2 are scripts/cross_build.sh
# with the NDK's toolchain file (the emulated ARM64 device runs the same script with
# cmake/toolchains/aarch64-linux-gnu.cmake):
#   1. tvm-ffi for Android from the apache-tvm-ffi source distribution (the version installed in
#      this Python), built with CMake: libtvm_ffi.so and its headers;
#   2. libtvm_nnapi_runtime.so (tvm_nnapi/runtime) against that tvm-ffi, without the mock (the
#      phone's libneuralnetworks.so is loaded at run time);
#   3. with --tvm-source: libtvm_runtime.so and tvm_rpc.
# Output: DIR/install/lib/*.so (plus libc++_shared.so) and, with --tvm-source, bin/tvm_rpc.
set -euo pipefail

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e '/SPDX-License-Identifier/d' -e 's/^# \{0,1\}//'
}

fail() {
  echo "build_android.sh: $*" >&2
  exit 2
}

repo="$(cd "$(dirname "$0")/.." && pwd)"
abi=""
api=29
build_dir=""
tvm_source=""
dry_run=0
while [ $# -gt 0 ]; do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --api) [ $# -ge 2 ] || fail "--api needs a level"; api="$2"; shift 2 ;;
    --build-dir) [ $# -ge 2 ] || fail "--build-dir needs a directory"; build_dir="$2"; shift 2 ;;
    --tvm-source) [ $# -ge 2 ] || fail "--tvm-source needs a directory"; tvm_source="$2"; shift 2 ;;
    --dry-run) dry_run=1; shift ;;
    -*) fail "unknown option $1 (see --help)" ;;
    *) [ -z "$abi" ] || fail "one ABI at a time (got $abi and $1)"; abi="$1"; shift ;;
  esac
done

case "$abi" in
  arm64-v8a | x86_64) ;;
  "") fail "give the ABI: arm64-v8a (phones) or x86_64 (emulator); see --help" ;;
  *) fail "ABI '$abi' is not supported: arm64-v8a or x86_64" ;;
esac
[[ "$api" =~ ^[0-9]+$ ]] && [ "$api" -ge 27 ] || fail "--api $api: NNAPI needs API level 27 or newer"

ndk="${ANDROID_NDK_HOME:-${ANDROID_NDK_ROOT:-}}"
[ -n "$ndk" ] || fail "ANDROID_NDK_HOME is not set: install an Android NDK (r23 or newer, e.g. with \
sdkmanager 'ndk;26.3.11579264') and export ANDROID_NDK_HOME=/path/to/ndk"
toolchain="$ndk/build/cmake/android.toolchain.cmake"
[ -f "$toolchain" ] || fail "$toolchain not found: ANDROID_NDK_HOME=$ndk is not an Android NDK"
[ -z "$tvm_source" ] || [ -f "$tvm_source/CMakeLists.txt" ] || fail "--tvm-source $tvm_source has no CMakeLists.txt"

python="${PYTHON:-python3}"
build_dir="${build_dir:-$repo/build/android/$abi}"
prefix="$build_dir/install"
case "$(uname -s)" in Darwin) host_tag=darwin-x86_64 ;; *) host_tag=linux-x86_64 ;; esac
case "$abi" in arm64-v8a) triple=aarch64-linux-android ;; x86_64) triple=x86_64-linux-android ;; esac
libcxx="$ndk/toolchains/llvm/prebuilt/$host_tag/sysroot/usr/lib/$triple/libc++_shared.so"

android_options=(-DANDROID_ABI="$abi" -DANDROID_PLATFORM="android-$api" -DANDROID_STL=c++_shared)
android_cmake=(
  -G Ninja
  -DCMAKE_TOOLCHAIN_FILE="$toolchain"
  "${android_options[@]}"
  -DCMAKE_BUILD_TYPE=Release
)

run() {
  echo "+ $*"
  if [ "$dry_run" = 0 ]; then "$@"; fi
}

# 1-2. tvm-ffi from its source distribution and the runtime library without the mock (the
# phone's libneuralnetworks.so is loaded at run time): the cross build shared with the emulated
# ARM64 device, here with the NDK's toolchain file.
cross=(--toolchain "$toolchain" --build-dir "$build_dir")
[ "$dry_run" = 0 ] || cross+=(--dry-run)
bash "$repo/scripts/cross_build.sh" "${cross[@]}" -- "${android_options[@]}"
run cp "$libcxx" "$prefix/lib/"

# 3. Optionally TVM's runtime and C++ RPC server (what the phone runs).
if [ -n "$tvm_source" ]; then
  run cmake -S "$tvm_source" -B "$build_dir/tvm" "${android_cmake[@]}" \
    -DUSE_CPP_RPC=ON -DUSE_RPC=ON -DUSE_LLVM=OFF -DUSE_LIBBACKTRACE=OFF -DUSE_OPENCL=OFF
  run cmake --build "$build_dir/tvm" --target tvm_runtime tvm_rpc
  run mkdir -p "$prefix/bin"
  run cp "$build_dir/tvm/libtvm_runtime.so" "$prefix/lib/"
  run cp "$build_dir/tvm/tvm_rpc" "$prefix/bin/"
fi
echo "build_android.sh: $abi build in $prefix (lib/libtvm_nnapi_runtime.so)"
