# Reproduces CI: the project's test suite on the mock NNAPI (`tox -e mock`), on a clean
# Debian with Python 3.11 and a C++17 compiler, as .ci/run sets it up.
#
#   docker build -f docker/ci.Dockerfile -t tvm-nnapi-ci .
#   docker run --rm tvm-nnapi-ci                 # tox -e mock
#   docker run --rm tvm-nnapi-ci tox -e rpc      # any other tox environment
FROM python:3.11-slim-bookworm

# g++ builds the mock NNAPI and the runtime; CMake and Ninja come from PyPI through the build.
RUN apt-get update \
    && apt-get install -y --no-install-recommends g++ make \
    && rm -rf /var/lib/apt/lists/*
RUN python -m pip install --no-cache-dir "tox>=4.11"

WORKDIR /src
COPY . /src
# Build the package and install the test environment once, so `docker run` only runs tests.
RUN tox -e mock --notest

ENV CI=true
CMD ["tox", "-e", "mock"]
