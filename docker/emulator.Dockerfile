# An Android emulator (x86_64 system image, API 30 by default) for the `emulator` test target.
#
#   docker build -f docker/emulator.Dockerfile -t tvm-nnapi-emulator:latest .
#   python emulator/android_emulator.py --backend docker     # or: tox -e emulator
#
# KVM is required: the x86_64 emulator runs only with hardware virtualisation, so the host must
# be Linux with /dev/kvm, and the container gets it with `--device /dev/kvm` (the harness does
# this). Without KVM the emulator refuses to start.
FROM debian:bookworm-slim

ARG API_LEVEL=30
ARG SYSTEM_IMAGE=google_apis
# Android SDK command-line tools release (the number in the download's file name).
ARG CMDLINE_TOOLS_BUILD=11076708

ENV ANDROID_SDK_ROOT=/opt/android-sdk \
    EMULATOR_API_LEVEL=${API_LEVEL} \
    EMULATOR_AVD=tvm_nnapi_api${API_LEVEL}
ENV PATH=${ANDROID_SDK_ROOT}/cmdline-tools/latest/bin:${ANDROID_SDK_ROOT}/platform-tools:${ANDROID_SDK_ROOT}/emulator:${PATH}

# Java for sdkmanager/avdmanager; the emulator's shared libraries; socat re-exposes adb.
RUN apt-get update \
    && apt-get install -y --no-install-recommends \
        ca-certificates curl unzip socat openjdk-17-jre-headless \
        libpulse0 libgl1 libnss3 libxcomposite1 libxcursor1 libxdamage1 libxi6 libxtst6 \
        libasound2 libdbus-1-3 libxkbfile1 \
    && rm -rf /var/lib/apt/lists/*

RUN mkdir -p ${ANDROID_SDK_ROOT}/cmdline-tools \
    && curl -fsSL -o /tmp/cmdline-tools.zip \
        "https://dl.google.com/android/repository/commandlinetools-linux-${CMDLINE_TOOLS_BUILD}_latest.zip" \
    && unzip -q /tmp/cmdline-tools.zip -d ${ANDROID_SDK_ROOT}/cmdline-tools \
    && mv ${ANDROID_SDK_ROOT}/cmdline-tools/cmdline-tools ${ANDROID_SDK_ROOT}/cmdline-tools/latest \
    && rm /tmp/cmdline-tools.zip

RUN yes | sdkmanager --licenses > /dev/null \
    && sdkmanager "platform-tools" "emulator" "platforms;android-${API_LEVEL}" \
        "system-images;android-${API_LEVEL};${SYSTEM_IMAGE};x86_64" \
    && echo no | avdmanager create avd --force --name "${EMULATOR_AVD}" \
        --package "system-images;android-${API_LEVEL};${SYSTEM_IMAGE};x86_64" --device pixel_5

COPY docker/emulator-entrypoint.sh /usr/local/bin/emulator-entrypoint.sh
RUN chmod 755 /usr/local/bin/emulator-entrypoint.sh

# adb of the emulator, re-exposed on the container's interface by the entrypoint.
EXPOSE 5555
HEALTHCHECK --interval=15s --timeout=10s --start-period=60s --retries=40 \
    CMD adb -s emulator-5554 shell getprop sys.boot_completed | grep -q 1
ENTRYPOINT ["/usr/local/bin/emulator-entrypoint.sh"]
