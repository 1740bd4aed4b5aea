#!/usr/bin/env bash
# What `make test` needs besides Node and pnpm, checked before anything runs: each missing piece
# is named with the commands that get it on Debian, instead of a wall of failing tests later.
# .ci/run installs and starts all of it on a fresh machine (as root).
set -uo pipefail
cd "$(dirname "$0")/.."

missing=0
ok() { printf '  ok       %s\n' "$1"; }
lack() {
  printf '  MISSING  %s\n' "$1"
  shift
  for line in "$@"; do printf '           %s\n' "$line"; done
  missing=$((missing + 1))
}

# host:port of a URL such as redis://user:pass@127.0.0.1:6379/0, with a default port.
host_port() {
  local rest=${1#*://}
  rest=${rest##*@}
  rest=${rest%%/*}
  rest=${rest%%\?*}
  case $rest in
    *:*) printf '%s' "$rest" ;;
    *) printf '%s:%s' "$rest" "$2" ;;
  esac
}

# Sends $2 to host:port $1 and prints what comes back: up to the first message or Redis's
# +PONG, or a second of silence.
talk() {
  local host=${1%:*} port=${1##*:}
  timeout 2 bash -c '
    exec 3<>"/dev/tcp/$1/$2" || exit 1
    printf "%b" "$3" >&3
    while IFS= read -r -t 1 line <&3; do
      printf "%s\n" "$line"
      case $line in MSG* | +PONG*) break ;; esac
    done
  ' _ "$host" "$port" "$2" 2>/dev/null
}

is_listening() {
  local host=${1%:*} port=${1##*:}
  timeout 2 bash -c 'exec 3<>"/dev/tcp/$1/$2"' _ "$host" "$port" 2>/dev/null
}

echo "make test needs:"

node_version=$(node -p 'process.versions.node' 2>/dev/null || true)
wanted_node=$(node -p "require('./package.json').engines.node.replace('>=', '')" 2>/dev/null || echo 20.19)
if [ -n "$node_version" ] && [ "$(printf '%s\n%s\n' "$wanted_node" "$node_version" | sort -V | head -n 1)" = "$wanted_node" ]; then
  ok "Node $node_version (>= $wanted_node)"
else
  lack "Node >= $wanted_node (found: ${node_version:-none})" \
    "apt-get install -y nodejs npm   # Debian trixie has 20.19; or https://nodejs.org"
fi

nats=$(host_port "${NATS_URL:-nats://127.0.0.1:4222}" 4222)
# A JetStream server answers $JS.API.INFO; one without JetStream leaves the request unanswered.
nats_reply=$(talk "$nats" 'CONNECT {"verbose":false}\r\nSUB _INBOX.preflight 1\r\nPUB $JS.API.INFO _INBOX.preflight 0\r\n\r\nPING\r\n')
if grep -q '^MSG _INBOX.preflight' <<<"$nats_reply"; then
  ok "NATS with JetStream on $nats"
elif grep -q '^INFO' <<<"$nats_reply"; then
  lack "JetStream on the NATS server at $nats (it runs without it)" \
    "restart it with -js, e.g.: nats-server -js -a 127.0.0.1 -p 4222 -sd /var/lib/nats-server &"
else
  lack "NATS with JetStream on $nats (NATS_URL)" \
    "apt-get install -y nats-server" \
    "mkdir -p /var/lib/nats-server && nats-server -js -a 127.0.0.1 -p 4222 -sd /var/lib/nats-server &"
fi

redis=$(host_port "${REDIS_URL:-redis://127.0.0.1:6379}" 6379)
if talk "$redis" 'PING\r\n' | grep -q '^+PONG'; then
  ok "Redis on $redis"
else
  lack "Redis on $redis (REDIS_URL)" \
    "apt-get install -y redis-server" \
    "redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save '' --appendonly no"
fi

# With DATABASE_URL the tests run on that server (the statement-timeout tests included); without
# it on the embedded PGlite, and the statement-timeout tests need a real server at 127.0.0.1:5432.
if [ -n "${DATABASE_URL:-}" ]; then
  postgres=$(host_port "$DATABASE_URL" 5432)
  if is_listening "$postgres"; then
    ok "PostgreSQL on $postgres (DATABASE_URL)"
  else
    lack "PostgreSQL on $postgres (DATABASE_URL): nothing answers there" \
      "sudo infra/ci/postgres17.sh start   # PostgreSQL 17 + pgvector, prints its DATABASE_URL" \
      "or unset DATABASE_URL to test on the embedded PGlite (docs/development.md)"
  fi
elif is_listening 127.0.0.1:5432; then
  ok "PostgreSQL on 127.0.0.1:5432 (the statement-timeout tests)"
else
  lack "PostgreSQL on 127.0.0.1:5432, user postgres with trust auth (the statement-timeout tests)" \
    "apt-get install -y postgresql" \
    "in /etc/postgresql/*/main/pg_hba.conf: host all postgres 127.0.0.1/32 trust" \
    "pg_ctlcluster \$(ls /etc/postgresql | sort -V | tail -n 1) main start" \
    "or run them all on PostgreSQL 17: DATABASE_URL=\$(sudo infra/ci/postgres17.sh start)"
fi

if [ -x /usr/bin/chromium ]; then
  ok "Chromium at /usr/bin/chromium (the web UI's browser test)"
else
  lack "Chromium at /usr/bin/chromium (the web UI's browser test)" \
    "apt-get install -y --no-install-recommends chromium"
fi

# The dashboards' test runs Debian's Prometheus and exporters as child processes on free ports.
for binary in prometheus prometheus-postgres-exporter prometheus-redis-exporter; do
  if [ -x "/usr/bin/$binary" ]; then
    ok "/usr/bin/$binary (the dashboards' Prometheus test)"
  else
    lack "/usr/bin/$binary (the dashboards' Prometheus test)" \
      "apt-get install -y --no-install-recommends $binary"
  fi
done

if command -v docker-compose >/dev/null 2>&1; then
  ok "docker-compose (the compose files' check)"
else
  lack "docker-compose (the compose files' check; no Docker engine needed)" \
    "apt-get install -y docker-compose"
fi

if [ "$missing" -gt 0 ]; then
  printf '\n%d missing: install or start them as above (bash .ci/run, as root, does all of it).\n' \
    "$missing" >&2
  exit 1
fi
