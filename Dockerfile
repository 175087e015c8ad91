# HAICO: one image serving the API, the AHP host and the built studio on port 8000.
FROM node:20-bookworm-slim AS studio
WORKDIR /src/frontend
ENV NEXT_TELEMETRY_DISABLED=1
COPY frontend/package.json frontend/package-lock.json frontend/.npmrc ./
RUN npm ci
COPY frontend/ ./
RUN npm run build

FROM python:3.11-slim-bookworm
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 HAICO_DATA_DIR=/data
WORKDIR /srv/haico
COPY backend/pyproject.toml backend/
COPY backend/app backend/app
RUN pip install --no-cache-dir -e ./backend
COPY backend/alembic.ini backend/
COPY backend/alembic backend/alembic
COPY --from=studio /src/frontend/out frontend/out
COPY docker-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
RUN chmod +x /usr/local/bin/docker-entrypoint.sh && mkdir -p /data && useradd -r -u 10001 haico \
    && chown haico /data
USER haico
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=3s --retries=5 \
  CMD python -c "import urllib.request,sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8000/api/health').status==200 else 1)"
ENTRYPOINT ["docker-entrypoint.sh"]
CMD ["serve"]
