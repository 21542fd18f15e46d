#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the libFuzzer targets with clang (-fsanitize=fuzzer,address,undefined) and runs each on
# a copy of its seed corpus. Used by tox -e libfuzzer (a short run in CI) and for long campaigns;
# docs/reliability.md explains the targets and how to reproduce a crash.
#
# Usage: scripts/run_libfuzzer.sh [--seconds N] [--jobs J] [--if-available] BUILD_DIR [TARGET...]
#   TARGET        model (tests/libfuzzer/model_fuzzer.cc) and/or graph (graph_fuzzer.cc);
#                 default: both
#   --seconds N   fuzzing time per target (default 20)
#   --jobs J      parallel fuzzing processes per target (libFuzzer -fork=J; default 1)
#   --if-available  without clang's libFuzzer, say so and exit 0 instead of failing
# The corpus grows in BUILD_DIR/corpus/TARGET (seeded from tests/libfuzzer/corpus/TARGET); a crash
# is written to BUILD_DIR/artifacts/ and fails the run. Extra libFuzzer flags: LIBFUZZER_FLAGS.
set -euo pipefail
seconds=20
jobs=1
if_available=0
while [[ $# -gt 0 && "$1" == --* ]]; do
  case "$1" in
    --seconds) seconds="$2"; shift ;;
    --jobs) jobs="$2"; shift ;;
    --if-available) if_available=1 ;;
    *) echo "unknown option $1 (see the header of $0)" >&2; exit 2 ;;
  esac
  shift
done
if [[ $# -lt 1 ]]; then
  echo "usage: $0 [--seconds N] [--jobs J] [--if-available] BUILD_DIR [model|graph ...]" >&2
  exit 2
fi
build_dir="$(mkdir -p "$1" && cd "$1" && pwd)"
shift
targets=("$@")
[[ ${#targets[@]} -eq 0 ]] && targets=(model graph)
root="$(cd "$(dirname "$0")/.." && pwd)"

# clang with its libFuzzer runtime (Debian: apt-get install clang libclang-rt-dev).
probe_dir="$(mktemp -d)"
trap 'rm -rf "$probe_dir"' EXIT
echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' \
  > "$probe_dir/probe.cc"
if ! command -v clang++ > /dev/null \
    || ! clang++ -fsanitize=fuzzer,address,undefined "$probe_dir/probe.cc" -o "$probe_dir/probe" \
      > "$probe_dir/probe.log" 2>&1; then
  echo "run_libfuzzer: clang++ with libFuzzer (-fsanitize=fuzzer) is not available:" >&2
  if command -v clang++ > /dev/null; then sed 's/^/  /' "$probe_dir/probe.log" >&2; fi
  echo "  install it with: apt-get install clang libclang-rt-dev" >&2
  if [[ $if_available == 1 ]]; then
    echo "run_libfuzzer: SKIPPED: the libFuzzer targets were not built or run"
    exit 0
  fi
  exit 1
fi

start=$SECONDS
echo "run_libfuzzer: building ${targets[*]} with $(clang++ --version | head -1) in $build_dir"
CC=clang CXX=clang++ cmake -S "$root" -B "$build_dir/cmake" -G Ninja \
  -DTVM_NNAPI_BUILD_FUZZERS=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DPython_EXECUTABLE="$(command -v python)" > "$build_dir/cmake.log" \
  || { cat "$build_dir/cmake.log"; exit 1; }
cmake --build "$build_dir/cmake" --target "${targets[@]/%/_fuzzer}"
echo "run_libfuzzer: build took $((SECONDS - start)) s"

export ASAN_OPTIONS="abort_on_error=1:detect_leaks=1:allocator_may_return_null=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
status=0
for target in "${targets[@]}"; do
  binary="$(find "$build_dir/cmake" -name "${target}_fuzzer" -type f -perm -u+x | head -1)"
  corpus="$build_dir/corpus/$target"
  mkdir -p "$corpus" "$build_dir/artifacts"
  cp -n "$root/tests/libfuzzer/corpus/$target/"* "$corpus/" 2> /dev/null || true
  log="$build_dir/$target.log"
  flags=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2560 -max_len=4096
         -print_final_stats=1 -artifact_prefix="$build_dir/artifacts/${target}-")
  [[ $jobs -gt 1 ]] && flags+=(-fork="$jobs" -ignore_crashes=0)
  [[ -f "$root/tests/libfuzzer/$target.dict" ]] && flags+=(-dict="$root/tests/libfuzzer/$target.dict")
  echo "run_libfuzzer: $target for ${seconds} s (corpus $corpus, $(ls "$corpus" | wc -l) inputs)"
  # shellcheck disable=SC2086
  if "$binary" "${flags[@]}" ${LIBFUZZER_FLAGS:-} "$corpus" > "$log" 2>&1; then
    result=passed
  else
    result=FAILED
    status=1
    tail -n 60 "$log"
  fi
  runs="$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | tail -1 | grep -o '[0-9]*$' || true)"
  rate="$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | tail -1 | grep -o '[0-9]*$' || true)"
  edges="$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*$' || true)"
  features="$(grep -o 'ft: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*$' || true)"
  total="$(grep -o 'Loaded 1 modules *([0-9]*' "$log" | head -1 | grep -o '[0-9]*$' || true)"
  echo "run_libfuzzer: $target $result: ${runs:-?} runs, ${rate:-?} exec/s, coverage ${edges:-?}" \
    "of ${total:-?} instrumented edges (${features:-?} features), corpus $(ls "$corpus" | wc -l)" \
    "inputs (log $log)"
done
exit $status
