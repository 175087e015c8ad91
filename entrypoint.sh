#!/bin/sh
# HAICO's container entrypoint; the same script runs on a host (the tests do).
#
#   entrypoint.sh serve      wait for the database, migrate under the advisory lock, serve
#   entrypoint.sh ARGS...    run `haico ARGS...` (e.g. `users create NAME`)
#
# Settings (environment; every HAICO_* setting of the app applies as well):
#   HAICO_CMD            how to run the CLI            (default: haico)
#   HAICO_PYTHON         the Python that has the app   (default: python)
#   HAICO_HOST / PORT    where to listen               (default: 0.0.0.0 / 8000)
#   HAICO_WORKERS        server processes on that port (default: 1; >1 needs PostgreSQL)
#   HAICO_DB_WAIT_ATTEMPTS, HAICO_DB_WAIT_SECONDS
#                        how often / how far apart to try the database (default: 30, 2)
set -eu

HAICO_CMD="${HAICO_CMD:-haico}"
HAICO_PYTHON="${HAICO_PYTHON:-python}"

wait_for_database() {
  attempts="${HAICO_DB_WAIT_ATTEMPTS:-30}"
  delay="${HAICO_DB_WAIT_SECONDS:-2}"
  i=1
  while :; do
    if "$HAICO_PYTHON" - <<'PY'
import asyncio
import sys

from haico.config import get_settings
from haico.db.engine import Database


async def ping() -> bool:
    db = Database(get_settings().sql_url)
    try:
        return await db.ping()
    finally:
        await db.dispose()


sys.exit(0 if asyncio.run(ping()) else 1)
PY
    then
      echo "entrypoint: the database answers (attempt $i of $attempts)" >&2
      return 0
    fi
    if [ "$i" -ge "$attempts" ]; then
      echo "entrypoint: the database did not answer after $attempts attempts ${delay}s apart;" \
        "check HAICO_DATABASE_URL and that the database server is running" >&2
      exit 69
    fi
    echo "entrypoint: waiting for the database (attempt $i of $attempts failed)" >&2
    i=$((i + 1))
    sleep "$delay"
  done
}

if [ "${1:-serve}" = "serve" ]; then
  [ "$#" -gt 0 ] && shift
  wait_for_database
  # `haico migrate` holds a PostgreSQL advisory lock while it runs Alembic and the
  # checkpointer's setup, so replicas started at once migrate one after another.
  # shellcheck disable=SC2086
  $HAICO_CMD migrate
  # shellcheck disable=SC2086
  exec $HAICO_CMD serve --no-migrate --host "${HAICO_HOST:-0.0.0.0}" --port "${PORT:-8000}" \
    --workers "${HAICO_WORKERS:-1}" "$@"
fi
# shellcheck disable=SC2086
exec $HAICO_CMD "$@"
