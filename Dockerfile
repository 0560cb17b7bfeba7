# stream-lsh worker image.
#
#   docker build -t stream-lsh:0.1.0 .
#   docker run --rm -e STREAM_LSH_BROKER=kafka:9092 -v stream-lsh-w1:/var/lib/stream-lsh stream-lsh:0.1.0
#
# Runs `stream-lsh worker` by default; any other command works too (`... stream-lsh:0.1.0 tail dedup-decisions`).
# Settings come from STREAM_LSH_* environment variables (README "Configuration", stream_lsh/settings.py).
# Everything is installed from PyPI wheels (numpy, rocksdict, selectolax, ... have manylinux wheels for
# CPython 3.11), so no compiler and no other download is needed.

ARG PYTHON_IMAGE=python:3.11-slim

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH
WORKDIR /src
# only what the package build needs (see .dockerignore): metadata, readme, sources
COPY pyproject.toml README.md ./
COPY stream_lsh ./stream_lsh
# the runtime dependencies only: not the embedded broker (the "embedded" extra, for the quick start)
RUN pip install .

FROM ${PYTHON_IMAGE}
LABEL org.opencontainers.image.title="stream-lsh" \
      org.opencontainers.image.description="Streaming near-duplicate filter for news pages (faust-streaming worker)" \
      org.opencontainers.image.licenses="Apache-2.0"
# A fixed non-root uid/gid: Kubernetes' securityContext (runAsUser/fsGroup 10001) makes the data volume
# writable for it. The data directory is created here, owned by that user, so a fresh Docker volume
# mounted on it inherits the ownership.
RUN groupadd --system --gid 10001 stream-lsh \
    && useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/stream-lsh --no-create-home \
       --shell /usr/sbin/nologin stream-lsh \
    && install -d -o 10001 -g 10001 -m 0750 /var/lib/stream-lsh
COPY --from=build /opt/venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    STREAM_LSH_DATA_DIR=/var/lib/stream-lsh
USER 10001:10001
WORKDIR /var/lib/stream-lsh
# RocksDB state of this worker: one volume per worker, never shared between two of them
VOLUME ["/var/lib/stream-lsh"]
ENTRYPOINT ["stream-lsh"]
CMD ["worker"]
