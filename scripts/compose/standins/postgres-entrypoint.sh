#!/bin/sh
# The stand-in postgres:16's entrypoint, the official image's behaviour that compose
# relies on: on an empty data directory, initdb with POSTGRES_USER/POSTGRES_PASSWORD
# (trust on the socket and loopback, scram-sha-256 from anywhere else), a temporary
# server on the socket only that creates POSTGRES_DB and runs
# /docker-entrypoint-initdb.d/*.sh and *.sql, then postgres listening on every address.
set -eu
if [ "${1:-}" != postgres ]; then
  exec "$@"
fi
shift
as_postgres() { setpriv --reuid=postgres --regid=postgres --init-groups "$@"; }
mkdir -p "$PGDATA"
chown postgres:postgres "$PGDATA"
chmod 700 "$PGDATA"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  user="${POSTGRES_USER:-postgres}"
  db="${POSTGRES_DB:-$user}"
  pwfile="$(mktemp)"
  printf '%s\n' "${POSTGRES_PASSWORD:?the stand-in needs POSTGRES_PASSWORD}" > "$pwfile"
  chown postgres "$pwfile"
  as_postgres initdb -D "$PGDATA" --username="$user" --pwfile="$pwfile" \
    --encoding=UTF8 --auth-local=trust --auth-host=trust >/dev/null
  rm -f "$pwfile"
  echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
  as_postgres pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
  if [ "$db" != postgres ]; then
    as_postgres psql -v ON_ERROR_STOP=1 -U "$user" -d postgres -q -c "CREATE DATABASE \"$db\""
  fi
  for f in /docker-entrypoint-initdb.d/*; do
    case "$f" in
      *.sh) echo "entrypoint: running $f" >&2; . "$f" ;;
      *.sql) echo "entrypoint: running $f" >&2; as_postgres psql -v ON_ERROR_STOP=1 -U "$user" -d "$db" -q -f "$f" ;;
    esac
  done
  as_postgres pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
  echo "entrypoint: database $db initialised" >&2
fi
exec setpriv --reuid=postgres --regid=postgres --init-groups postgres -D "$PGDATA" \
  -c listen_addresses='*' "$@"
