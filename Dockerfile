# HAICO: one image serving the API, the AHP host and the built studio on port 8000.
# Build: `docker build -t haico .` (or `docker compose build`). Three stages:
#   studio  - Node builds the static studio (npm ci from package-lock.json)
#   python  - a venv installed from backend/requirements-runtime.lock (the runtime
#             dependencies only, every file's hash checked), then the package itself
#             with --no-deps (`make install` does the same with the full lock)
#   final   - the slim Python image with the venv, the app and the studio; no
#             compiler, no Node, runs as the unprivileged user `haico`.
# The two base images are build arguments (compose passes HAICO_NODE_IMAGE and
# HAICO_PYTHON_IMAGE), so that the same file builds on a mirror's copies of them or on
# the stand-ins `make test-compose` makes where no registry is reachable.
ARG NODE_IMAGE=node:20-bookworm-slim
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${NODE_IMAGE} AS studio
WORKDIR /srv/haico/frontend
ENV NEXT_TELEMETRY_DISABLED=1
COPY frontend/package.json frontend/package-lock.json frontend/.npmrc ./
RUN npm ci --no-audit --no-fund --loglevel=error
COPY frontend/ ./
RUN npm run build

FROM ${PYTHON_IMAGE} AS python
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
RUN python -m venv /opt/venv
COPY backend/requirements-runtime.lock /tmp/requirements-runtime.lock
RUN /opt/venv/bin/pip install --require-hashes -r /tmp/requirements-runtime.lock
WORKDIR /srv/haico/backend
COPY backend/pyproject.toml backend/alembic.ini ./
COPY backend/haico haico
COPY backend/alembic alembic
# Editable, so that the app finds alembic/ and ../frontend/out beside it, as in a clone.
RUN /opt/venv/bin/pip install --no-deps -e . \
    && /opt/venv/bin/python -m compileall -q haico alembic

FROM ${PYTHON_IMAGE}
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PATH=/opt/venv/bin:$PATH \
    HAICO_DATA_DIR=/data HAICO_HOST=0.0.0.0 PORT=8000
# jemalloc keeps a long-running server's memory flat (backend/haico/process/allocator.py);
# HAICO_ALLOCATOR=jemalloc makes `haico serve` refuse to start without it.
ENV HAICO_ALLOCATOR=jemalloc
RUN apt-get update && apt-get install -y --no-install-recommends libjemalloc2 \
    && rm -rf /var/lib/apt/lists/*
RUN useradd --system --uid 10001 --no-create-home --home-dir /srv/haico haico \
    && mkdir -p /data && chown haico /data
COPY --from=python /opt/venv /opt/venv
COPY --from=python /srv/haico/backend /srv/haico/backend
COPY --from=studio /srv/haico/frontend/out /srv/haico/frontend/out
COPY entrypoint.sh /usr/local/bin/entrypoint.sh
WORKDIR /srv/haico/backend
USER haico
EXPOSE 8000
VOLUME ["/data"]
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=5 \
  CMD ["python", "-c", "import os,sys,urllib.request; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:%s/api/health' % os.environ.get('PORT', '8000'), timeout=2).status == 200 else 1)"]
ENTRYPOINT ["entrypoint.sh"]
CMD ["serve"]
