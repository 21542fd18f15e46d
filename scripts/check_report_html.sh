#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Check that a `tvm-nnapi ... --report out.html` page renders in headless Chromium without errors.
#
#   scripts/check_report_html.sh REPORT.html [SCREENSHOT.png]
#
# Loads the page from file:// (no network: the page's Content-Security-Policy would report any
# fetch as a console message), dumps the DOM after scripts ran and fails when
#   - Chromium printed any console message for the page (script errors, CSP violations, ...),
#   - the page's script did not finish (no data-ready="1" on <body>) or recorded errors
#     (data-errors on <body>),
#   - the graph SVG is missing.
# With SCREENSHOT.png it also writes a 1400x2200 screenshot.
#
# Needs Debian's chromium (`apt-get install chromium`) or $CHROMIUM naming a Chromium/Chrome
# binary. Exit codes: 0 renders cleanly, 1 errors found, 2 usage error or no Chromium.
set -euo pipefail

if [[ $# -lt 1 || $# -gt 2 ]]; then
  echo "usage: $0 REPORT.html [SCREENSHOT.png]" >&2
  exit 2
fi
report=$(realpath "$1")
screenshot=${2:-}
if [[ ! -f $report ]]; then
  echo "error: $1: no such file" >&2
  exit 2
fi
browser=${CHROMIUM:-}
if [[ -z $browser ]]; then
  for candidate in chromium chromium-browser google-chrome; do
    if command -v "$candidate" >/dev/null; then
      browser=$candidate
      break
    fi
  done
fi
if [[ -z $browser ]]; then
  echo "error: no Chromium found; install Debian's chromium (apt-get install chromium) or set" \
    "CHROMIUM=/path/to/chrome" >&2
  exit 2
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# --no-sandbox: Chromium refuses to run as root with its sandbox; the page is local and trusted.
flags=(--headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run
  --user-data-dir="$work/profile" --enable-logging=stderr --v=0 --virtual-time-budget=3000)
url="file://$report"

timeout 120 "$browser" "${flags[@]}" --dump-dom "$url" >"$work/dom.html" 2>"$work/stderr.log" || {
  echo "error: $browser failed to load $report:" >&2
  grep -v -e dbus -e 'unexpected operator' "$work/stderr.log" | tail -20 >&2
  exit 1
}

status=0
if grep -F ':CONSOLE' "$work/stderr.log" | grep -F "$url" >"$work/console.log"; then
  echo "error: console messages while rendering $report:" >&2
  cat "$work/console.log" >&2
  status=1
fi
if ! grep -q 'data-ready="1"' "$work/dom.html"; then
  echo "error: the report's script did not finish (no data-ready=\"1\" on <body>)" >&2
  status=1
fi
if grep -q 'data-errors=' "$work/dom.html"; then
  echo "error: the report's script recorded errors:" >&2
  grep -o 'data-errors="[^"]*"' "$work/dom.html" >&2
  status=1
fi
if ! grep -q 'aria-label="partitioned graph"' "$work/dom.html"; then
  echo "error: no partitioned-graph SVG in the rendered page" >&2
  status=1
fi

if [[ -n $screenshot ]]; then
  timeout 120 "$browser" "${flags[@]}" --window-size=1400,2200 \
    --screenshot="$(realpath -m "$screenshot")" "$url" >/dev/null 2>"$work/shot.log" || {
    echo "error: screenshot failed" >&2
    tail -5 "$work/shot.log" >&2
    status=1
  }
  [[ -s $screenshot ]] || { echo "error: no screenshot written" >&2; status=1; }
fi

if [[ $status -eq 0 ]]; then
  echo "ok: $report renders in $browser without errors${screenshot:+ (screenshot: $screenshot)}"
fi
exit $status
