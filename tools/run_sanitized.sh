#!/usr/bin/env bash
# Builds mock_nnapi with AddressSanitizer + UndefinedBehaviorSanitizer and runs the mock's C API
# and operation tests against it (tox -e sanitize). Usage: tools/run_sanitized.sh BUILD_DIR [pytest args]
# Leak checking is done by the C-program tests (tests/mock_api), whose binaries run with
# detect_leaks=1; inside Python it is off, since every allocation comes through Python frames.
set -euo pipefail
build_dir="$1"
shift
root="$(cd "$(dirname "$0")/.." && pwd)"
python="$(command -v python)"
cmake -S "$root" -B "$build_dir" -G Ninja -DTVM_NNAPI_BUILD_RUNTIME=OFF \
  -DTVM_NNAPI_SANITIZERS="address;undefined" -DCMAKE_BUILD_TYPE=Debug \
  -DPython_EXECUTABLE="$python" > "$build_dir.cmake.log"
cmake --build "$build_dir"
export TVM_NNAPI_LIBRARY="$build_dir/mock_nnapi/libneuralnetworks.so"
export MOCK_NNAPI_PROFILE_DIR="$root/mock_nnapi/profiles"
export PYTHONPATH="$root/mock_nnapi/python${PYTHONPATH:+:$PYTHONPATH}"
export LD_PRELOAD="$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)"
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
cd "$root"
exec python -m pytest -p no:cacheprovider "$@"
