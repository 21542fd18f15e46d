#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Starts the emulator headless (console 5554, adb 5555 on the container's loopback) and
# re-exposes its adb port on the container's network interface, where Docker publishes it.
set -euo pipefail

if [ ! -e /dev/kvm ]; then
  echo "emulator-entrypoint: /dev/kvm is missing: run the container with --device /dev/kvm" >&2
  exit 2
fi

emulator -avd "${EMULATOR_AVD}" -port 5554 -no-window -no-audio -no-boot-anim -no-snapshot \
  -wipe-data -gpu swiftshader_indirect -memory "${EMULATOR_MEMORY_MB:-4096}" -accel on &
emulator_pid=$!

address="$(hostname -i | awk '{print $1}')"
socat "TCP-LISTEN:5555,bind=${address},fork,reuseaddr" TCP:127.0.0.1:5555 &

trap 'kill "${emulator_pid}" 2>/dev/null || true' TERM INT
wait "${emulator_pid}"
