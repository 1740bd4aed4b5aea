#!/usr/bin/env bash
# PostgreSQL 17 with pgvector, the engine production runs, for the test suite: a Debian trixie
# root filesystem made from Debian's archive, with the server running in it as a chroot, since
# these machines have no Docker engine and no registry. Needs root.
#   infra/ci/postgres17.sh start   makes the root filesystem and the cluster if needed, starts the
#                                  server if it is not running, and prints its DATABASE_URL
#   infra/ci/postgres17.sh stop    stops the server
#   infra/ci/postgres17.sh url     prints the DATABASE_URL
# The root filesystem and the cluster are kept, so a second start costs seconds. The tests make
# a database of their own per test file on it (packages/db/src/testing.ts) and drop it after.
set -euo pipefail

root=${POSTGRES17_ROOT:-/var/lib/jarvis-ci/postgres17}
# Not 5432: these machines run their own PostgreSQL there.
port=${POSTGRES17_PORT:-5433}
# Paths inside the chroot.
data=/var/lib/jarvis-test/data
log=/var/lib/jarvis-test/server.log
bin=/usr/lib/postgresql/17/bin

url="postgres://postgres@127.0.0.1:${port}/postgres"

as_postgres() {
  local uid gid
  uid=$(awk -F: '$1 == "postgres" { print $3 }' "$root/etc/passwd")
  gid=$(awk -F: '$1 == "postgres" { print $4 }' "$root/etc/passwd")
  chroot --userspec="$uid:$gid" "$root" \
    /usr/bin/env -i PATH=/usr/bin:/bin LANG=C.UTF-8 HOME=/var/lib/postgresql "$@"
}

is_running() {
  [ -f "$root/$data/postmaster.pid" ] && as_postgres "$bin/pg_ctl" status -D "$data" >/dev/null 2>&1
}

start() {
  if [ "$(id -u)" -ne 0 ]; then
    echo "$0: needs root (it makes a root filesystem and runs a chroot)" >&2
    exit 1
  fi
  if is_running; then
    echo "$url"
    return
  fi
  # Nothing is mounted into the chroot: the server needs neither /proc nor /dev/shm (its dynamic
  # shared memory lives in files), and debootstrap made the few /dev nodes it opens. So the
  # root filesystem can be made anew or removed while no server runs in it.
  "$(dirname "$0")/debian-rootfs.sh" trixie "$root" postgresql-17 postgresql-17-pgvector
  if [ ! -f "$root/$data/PG_VERSION" ]; then
    rm -rf "${root:?}/$data"
    mkdir -p "$root/$(dirname "$data")"
    chown "$(awk -F: '$1 == "postgres" { print $3 ":" $4 }' "$root/etc/passwd")" \
      "$root/$(dirname "$data")"
    as_postgres "$bin/initdb" -D "$data" -U postgres --encoding=UTF8 --locale=C.UTF-8 \
      --auth=trust >/dev/null
    # Only this machine's loopback may connect, without a password: the server holds test
    # databases and nothing else.
    cat >"$root/$data/pg_hba.conf" <<'EOF'
local all all trust
host all all 127.0.0.1/32 trust
EOF
    cat >>"$root/$data/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '/tmp'
# Test files run in parallel, each with its own database and pools, and an end-to-end file
# starts six services with a pool of up to ten connections each.
max_connections = 400
shared_buffers = 256MB
# Test data is thrown away after each run, so durability buys nothing here.
fsync = off
synchronous_commit = off
full_page_writes = off
# No /dev/shm in the chroot: dynamic shared memory lives in files of the data folder.
dynamic_shared_memory_type = mmap
EOF
  fi
  as_postgres "$bin/pg_ctl" start -D "$data" -l "$log" -w -t 60 >/dev/null || {
    tail -n 20 "$root/$log" >&2
    exit 1
  }
  echo "$url"
}

stop() {
  if is_running; then
    as_postgres "$bin/pg_ctl" stop -D "$data" -m fast -w >/dev/null
  fi
}

case "${1:-}" in
start) start ;;
stop) stop ;;
url) echo "$url" ;;
*)
  echo "usage: $0 start|stop|url" >&2
  exit 64
  ;;
esac
