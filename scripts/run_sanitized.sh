#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds mock_nnapi (and, with --runtime or --thread, the tvm_nnapi runtime module) with
# sanitizers, then runs pytest against those builds. Used by tox -e sanitize and tox -e tsan;
# docs/reliability.md explains the selections.
#
# Usage: scripts/run_sanitized.sh [--runtime] [--thread] BUILD_DIR [pytest args]
#   (default)  AddressSanitizer + UndefinedBehaviorSanitizer build of the mock.
#   --runtime  also build the runtime module with them, and first run the C++ leak check
#              (tests/c/runtime_leak_check.cc) with LeakSanitizer: the runtime compiled,
#              run, faulted and fed hostile graphs without Python, every allocation accounted.
#   --thread   ThreadSanitizer build of the mock and the runtime instead (implies --runtime);
#              runtime_leak_check runs first (its eight threads on one module), then pytest.
#
# Leak checking needs a process whose every allocation the sanitizer can attribute: the C
# programs (tests/c, tests/mock_api/test_c_program.py) and runtime_leak_check run with
# detect_leaks=1. Inside Python it is off (the interpreter and TVM keep allocations until exit);
# there, NNAPI object leaks are caught by the mock's live-object counters instead.
set -euo pipefail
runtime=0
sanitizers="address;undefined"
while [[ $# -gt 0 && "$1" == --* ]]; do
  case "$1" in
    --runtime) runtime=1 ;;
    --thread) sanitizers="thread"; runtime=1 ;;
    *) echo "unknown option $1 (see the header of $0)" >&2; exit 2 ;;
  esac
  shift
done
if [[ $# -lt 1 ]]; then
  echo "usage: $0 [--runtime] [--thread] BUILD_DIR [pytest args]" >&2
  exit 2
fi
build_dir="$1"
shift
root="$(cd "$(dirname "$0")/.." && pwd)"
python="$(command -v python)"
runtime_flag=OFF
[[ $runtime == 1 ]] && runtime_flag=ON
start=$SECONDS
echo "run_sanitized: building with -fsanitize=${sanitizers} (runtime: ${runtime_flag}) in ${build_dir}"
mkdir -p "$build_dir"
cmake -S "$root" -B "$build_dir" -G Ninja -DTVM_NNAPI_BUILD_RUNTIME="$runtime_flag" \
  -DTVM_NNAPI_BUILD_TESTS="$runtime_flag" -DTVM_NNAPI_SANITIZERS="$sanitizers" \
  -DCMAKE_BUILD_TYPE=Debug -DPython_EXECUTABLE="$python" > "$build_dir.cmake.log"
cmake --build "$build_dir"
echo "run_sanitized: build took $((SECONDS - start)) s"

export TVM_NNAPI_LIBRARY="$build_dir/mock_nnapi/libneuralnetworks.so"
export MOCK_NNAPI_PROFILE_DIR="$root/mock_nnapi/profiles"
export PYTHONPATH="$root/mock_nnapi/python${PYTHONPATH:+:$PYTHONPATH}"
if [[ $runtime == 1 ]]; then
  export TVM_NNAPI_RUNTIME_LIBRARY="$build_dir/tvm_nnapi/runtime/libtvm_nnapi_runtime.so"
  export PYTHONPATH="$root:$PYTHONPATH"
fi
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
if [[ "$sanitizers" == "thread" ]]; then
  export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:report_signal_unsafe=0:suppressions=$root/scripts/tsan.supp"
  # The same native program first: eight threads on one module, with no Python in between.
  echo "run_sanitized: runtime_leak_check under ThreadSanitizer"
  "$build_dir/tvm_nnapi/runtime/runtime_leak_check"
  export LD_PRELOAD="$(gcc -print-file-name=libtsan.so)"
else
  if [[ $runtime == 1 ]]; then
    leak_start=$SECONDS
    echo "run_sanitized: runtime leak check (LeakSanitizer on)"
    ASAN_OPTIONS="detect_leaks=1:abort_on_error=1" \
      "$build_dir/tvm_nnapi/runtime/runtime_leak_check"
    echo "run_sanitized: leak check took $((SECONDS - leak_start)) s"
  fi
  export LD_PRELOAD="$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)"
  export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1"
fi
cd "$root"
exec python -m pytest -p no:cacheprovider "$@"
