# syntax=docker/dockerfile:1
# The operator's image: `make image` (docker build -t elastic-quota-operator:<version> .).
# The Helm chart runs it as `elastic-quota run` (image.repository / image.tag, the tag defaulting
# to the chart's appVersion = the package version), as user 65532 on a read-only root file
# system, with emptyDirs on /tmp and $NUMBA_CACHE_DIR.

ARG PYTHON_IMAGE=python:3.11-slim

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
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY operator ./operator
# Binary wheels only for the dependencies (numpy, numba, llvmlite, cryptography... all ship them
# for CPython 3.11 on Linux): no compiler in this stage either. Empty variables are dropped so
# that pip falls back to its defaults.
RUN set -eu; \
    for name in PIP_INDEX_URL PIP_EXTRA_INDEX_URL PIP_TRUSTED_HOST; do \
        eval "value=\${$name:-}"; [ -n "$value" ] || unset "$name"; \
    done; \
    python -m venv /opt/elastic-quota; \
    python -m pip wheel --no-deps --wheel-dir /wheels .; \
    /opt/elastic-quota/bin/pip install --only-binary=:all: /wheels/*.whl; \
    /opt/elastic-quota/bin/pip uninstall --yes --quiet pip setuptools wheel || true; \
    /opt/elastic-quota/bin/python -m compileall -q /opt/elastic-quota/lib; \
    /opt/elastic-quota/bin/elastic-quota --help > /dev/null

# -- runtime: the venv on a slim Python, no build tools, non-root --------------------------------
FROM ${PYTHON_IMAGE}
ARG VERSION=0.1.0
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
COPY --from=builder /opt/elastic-quota /opt/elastic-quota
ENV PATH=/opt/elastic-quota/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    NUMBA_CACHE_DIR=/var/cache/numba
USER 65532:65532
# metrics and probes (metrics.port), HTTPS admission webhooks (webhooks.port)
EXPOSE 8080 9443
ENTRYPOINT ["elastic-quota"]
CMD ["run"]
