# syntax=docker/dockerfile:1
# The operator's image: `make image` (docker build -t elastic-quota-operator:<version> .); `make
# release REGISTRY=oci://<host>/<path>` builds it as <host>/<path>/elastic-quota-operator:<version>
# and pushes it with the chart.
# The Helm chart runs it as `elastic-quota run` (image.repository / image.tag, the tag defaulting
# to the chart's appVersion = the package version), as user 65532 on a read-only root file
# system, with emptyDirs on /tmp and $NUMBA_CACHE_DIR.
#
# The solver kernel is compiled here, once, into a seed cache (/opt/elastic-quota/share/
# numba-cache-seed) that the operator copies into its empty $NUMBA_CACHE_DIR at start-up
# (elasticquota.numbacache): a new replica loads the kernel in well under a second instead of
# compiling it for about 10 s of CPU. numba accepts a cached kernel only if the source file is at
# the same absolute path with the same stamp, numba and Python are the same, and the target CPU
# is the same: hence the venv at its final path in both stages, whole-second source mtimes (older
# numba releases stamp the source by mtime and size, and some builders drop fractions of a second;
# numba 0.68 hashes the contents instead), and NUMBA_CPU_NAME=generic at build and run time
# (portable code: the build machine's CPU is not the nodes'; the kernel measured no slower).

# The base, pinned to an exact release (Python patch version and Debian release) so that a rebuild
# of a tag gets the same interpreter, which the kernel seed's keys include; a digest
# (`--build-arg PYTHON_IMAGE=python:3.11.11-slim-bookworm@sha256:...`) pins it to the byte.
# tests/unit/test_release.py refuses a floating tag here.
ARG PYTHON_IMAGE=python:3.11.11-slim-bookworm

# -- builder: a wheel of the project, installed with its dependencies into a venv ----------------
FROM ${PYTHON_IMAGE} AS builder
# The package index is the builder's own (pip's usual variables, passed from the environment of
# `docker build`: `--build-arg PIP_INDEX_URL` without a value takes the caller's variable); unset:
# pip's default index.
ARG PIP_INDEX_URL
ARG PIP_EXTRA_INDEX_URL
ARG PIP_TRUSTED_HOST
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    NUMBA_CPU_NAME=generic
WORKDIR /src
COPY pyproject.toml README.md constraints.txt ./
COPY operator ./operator
# Binary wheels only for the dependencies (numpy, numba, llvmlite, cryptography... all ship them
# for CPython 3.11 on Linux): no compiler in this stage either; at the versions of constraints.txt,
# the ones the test suite passed with. Empty variables are dropped so that pip falls back to its
# defaults.
RUN set -eu; \
    for name in PIP_INDEX_URL PIP_EXTRA_INDEX_URL PIP_TRUSTED_HOST; do \
        eval "value=\${$name:-}"; [ -n "$value" ] || unset "$name"; \
    done; \
    python -m venv /opt/elastic-quota; \
    python -m pip wheel --no-deps --wheel-dir /wheels .; \
    /opt/elastic-quota/bin/pip install --only-binary=:all: --constraint constraints.txt \
        /wheels/*.whl; \
    /opt/elastic-quota/bin/pip uninstall --yes --quiet pip setuptools wheel || true; \
    find /opt/elastic-quota/lib -path '*/site-packages/elasticquota/*' -name '*.py' \
        -exec touch -c -m -d "@$(date +%s)" {} +; \
    /opt/elastic-quota/bin/python -m compileall -q /opt/elastic-quota/lib; \
    /opt/elastic-quota/bin/elastic-quota --help > /dev/null
# The seed: the warm-up compiles the kernel into an empty cache directory (no seed to copy here).
RUN NUMBA_CACHE_DIR=/opt/elastic-quota/share/numba-cache-seed \
    /opt/elastic-quota/bin/python -m elasticquota.numbacache

# -- runtime: the venv on a slim Python, no build tools, non-root --------------------------------
FROM ${PYTHON_IMAGE}
ARG VERSION=0.2.0
LABEL org.opencontainers.image.title="elastic-quota-operator" \
      org.opencontainers.image.description="Hierarchical elastic quota for Kubernetes" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0"
# The base image's own pip/setuptools/wheel go too: nothing installs anything at run time.
RUN set -eu; \
    groupadd --system --gid 65532 nonroot; \
    useradd --system --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin nonroot; \
    mkdir -p /var/cache/numba; \
    chown 65532:65532 /var/cache/numba; \
    python -m pip uninstall --yes --quiet pip setuptools wheel || true
# COPY keeps the files' modification times (and the venv's path: the seed's keys).
COPY --from=builder /opt/elastic-quota /opt/elastic-quota
ENV PATH=/opt/elastic-quota/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    NUMBA_CACHE_DIR=/var/cache/numba \
    NUMBA_CPU_NAME=generic \
    ELASTIC_QUOTA_NUMBA_CACHE_SEED=/opt/elastic-quota/share/numba-cache-seed
# The seed works in this image: copied into an empty cache as at start-up, the kernel must load
# from it, not compile (the build fails otherwise).
RUN set -eu; \
    cache="$(mktemp -d)"; \
    NUMBA_CACHE_DIR="$cache" /opt/elastic-quota/bin/python -m elasticquota.numbacache \
        --require-cached; \
    rm -rf "$cache"
USER 65532:65532
# metrics and probes (metrics.port), HTTPS admission webhooks (webhooks.port)
EXPOSE 8080 9443
ENTRYPOINT ["elastic-quota"]
CMD ["run"]
