#!/bin/sh
# Bring the schema (Alembic, then the checkpointer's tables) up to date, then serve.
set -e
if [ "$1" = "serve" ]; then
  haico migrate
  exec haico serve --no-migrate --host 0.0.0.0 --port "${PORT:-8000}"
fi
exec haico "$@"
