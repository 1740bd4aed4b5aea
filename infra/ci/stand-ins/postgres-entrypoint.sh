#!/bin/bash
# What the official postgres image's entrypoint does for compose.yaml: on first start, initdb
# with POSTGRES_USER and POSTGRES_PASSWORD, create POSTGRES_DB, and run the scripts in
# /docker-entrypoint-initdb.d against a temporary server that listens on the unix socket only;
# then the real server, as postgres, listening on every address with password authentication.
set -euo pipefail

if [ "${1:-}" != postgres ]; then
  exec "$@"
fi

as_postgres() {
  setpriv --reuid=postgres --regid=postgres --init-groups "$@"
}

user=${POSTGRES_USER:-postgres}
db=${POSTGRES_DB:-$user}
mkdir -p "$PGDATA" /var/run/postgresql
chown postgres:postgres "$PGDATA" /var/run/postgresql
chmod 700 "$PGDATA"

if [ ! -s "$PGDATA/PG_VERSION" ]; then
  if [ -z "${POSTGRES_PASSWORD:-}" ]; then
    echo "POSTGRES_PASSWORD is not set" >&2
    exit 1
  fi
  pwfile=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
  chown postgres "$pwfile"
  as_postgres initdb --username="$user" --pwfile="$pwfile" --auth-local=trust \
    --auth-host=scram-sha-256 -D "$PGDATA" >/dev/null
  rm -f "$pwfile"
  echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
  echo "listen_addresses = '*'" >>"$PGDATA/postgresql.conf"

  as_postgres pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
  psql=(psql -v ON_ERROR_STOP=1 --username "$user" --no-password --no-psqlrc)
  if [ "$db" != postgres ]; then
    as_postgres "${psql[@]}" --dbname postgres -c "CREATE DATABASE \"$db\"" >/dev/null
  fi
  for f in /docker-entrypoint-initdb.d/*; do
    case "$f" in
      *.sql) as_postgres "${psql[@]}" --dbname "$db" -f "$f" ;;
      *.sh) . "$f" ;;
      *) ;;
    esac
  done
  as_postgres pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
  echo "PostgreSQL init process complete; ready for start up."
fi

exec setpriv --reuid=postgres --regid=postgres --init-groups "$@"
