#!/usr/bin/env bash
# CI's container stage: builds the six service images and runs the stack in containers the way
# users run it (compose.yaml), with infra/ci/compose.ci.yaml on top, then checks that
#   every container turns healthy; a chat turn answers; the tools service's browser opens a page
#   with Chromium's sandbox on, and so does the tools image under the seccomp profile compose.yaml
#   gives it; run_code runs sealed in its box, in the service and in the image under that profile;
#   a service killed with kill -9 is restarted by its policy and turns healthy again; down then up keeps the conversation;
#   make backup, down -v and make restore bring it back; compose.prod.yaml resolves on top of
#   compose.yaml.
# Prints one line per check and its timings, and fails if any check fails. Runs as root on a
# Debian machine (podman and docker-compose 1.29 through podman's socket, infra/ci/podman-setup.sh);
# cleans up after itself: containers, volumes, network, socket.
set -euo pipefail
cd "$(dirname "$0")/../.."

project=jarvis-ci
port=${CI_GATEWAY_PORT:-18080}
gateway=http://127.0.0.1:$port
# Long enough for a first start on 2 busy cores (migrations; Chromium starts on first use).
healthy_within=${CI_HEALTHY_WITHIN_SECONDS:-240}

step_started=$SECONDS
# step NAME: prints how long the step before it took.
step() {
  local now=$SECONDS
  if [ -n "${step_name:-}" ]; then
    printf -- '--- %s: %ds\n' "$step_name" "$((now - step_started))"
  fi
  step_name=$1
  step_started=$now
}

failed=0
# check DESCRIPTION COMMAND...: one line per check; the command's output is shown when it fails.
check() {
  local description=$1 out
  shift
  if out=$("$@" 2>&1); then
    printf 'ok   %s%s\n' "$description" "${out:+ ($out)}"
  else
    failed=$((failed + 1))
    printf 'FAIL %s\n' "$description"
    printf '%s\n' "$out" | tail -n 30 | sed 's/^/       /'
  fi
}

step "podman"
infra/ci/podman-setup.sh
# shellcheck source=/dev/null
source "$(infra/ci/podman-setup.sh env)"

JARVIS_ADMIN_KEY=ci-admin-$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
export JARVIS_ADMIN_KEY CI_GATEWAY_PORT=$port
compose=(docker-compose --compatibility -p "$project" -f compose.yaml -f infra/ci/compose.ci.yaml)
# podman's Docker API cannot take a seccomp profile from docker-compose (it opens the JSON that
# docker-compose sends as a file name), so the stack runs under podman's default profile, which
# allows Chromium's namespaces and bubblewrap's mounts too; the "browser" and "run_code" steps run
# the tools image under compose.yaml's own profile by hand. docs/deploy.md, "Chromium's sandbox".
export TOOLS_SECCOMP=no-new-privileges

cleanup() {
  "${compose[@]}" down -v --remove-orphans >/dev/null 2>&1 || true
  rm -f "${conversation_file:-}"
  rm -rf "${backup_dir:-}"
  if [ -n "${created_env_prod:-}" ]; then rm -f .env.prod; fi
  infra/ci/podman-setup.sh stop
}
trap cleanup EXIT

step "base images"
infra/ci/base-images.sh

# Without DOCKER_HOST no Docker engine answers here, so make images takes its podman branch.
# The builds' npm downloads use the host's network: podman's bridge has no route out on these
# machines (the stack itself needs none).
step "service images"
env -u DOCKER_HOST make --no-print-directory images IMAGE_BUILD_FLAGS=--network=host
podman build --quiet --format docker --network=host -f infra/ci/fake-llm.Dockerfile \
  -t jarvis-ci/fake-llm:local . >/dev/null

# The containers compose made for this project, one id a line.
containers() {
  podman ps -a -q --filter "label=com.docker.compose.project=$project"
}

# Waits until every container of the project reports healthy; prints how long it took.
wait_healthy() {
  local started=$SECONDS id status unhealthy
  while :; do
    unhealthy=""
    for id in $(containers); do
      status=$(podman inspect --format '{{.Name}} {{.State.Status}} {{.State.Health.Status}}' "$id")
      [[ $status == *" running healthy" ]] || unhealthy+="$status; "
    done
    if [ -z "$unhealthy" ] && [ -n "$(containers)" ]; then
      echo "$(containers | wc -l) containers in $((SECONDS - started)) s"
      return 0
    fi
    if [ $((SECONDS - started)) -ge "$healthy_within" ]; then
      echo "not healthy after ${healthy_within} s: $unhealthy"
      for id in $(containers); do
        podman logs --tail 5 "$id" 2>&1 | sed "s/^/$(podman inspect --format '{{.Name}}' "$id"): /"
      done
      return 1
    fi
    sleep 2
  done
}

step "compose up"
"${compose[@]}" up -d --no-build
check "every container turns healthy" wait_healthy

# api METHOD PATH [BODY]: the gateway's answer, with the admin key; fails on an HTTP error.
api() {
  curl -sS --fail-with-body -X "$1" -H "authorization: Bearer $JARVIS_ADMIN_KEY" \
    -H 'content-type: application/json' ${3:+--data "$3"} "$gateway$2"
}

# A check runs in a subshell: what later checks need is kept in a file.
conversation_file=$(mktemp)
first_question="Please remember: the lighthouse keeper's cat is called Biscuit."
# A check runs with errexit off (it is a condition), hence the explicit returns.
chat_answers() {
  local reply
  reply=$(api POST /v1/chat "{\"message\": \"$first_question\"}") || {
    echo "$reply"
    return 1
  }
  printf '%s' "$reply" | python3 -c 'import json,sys; print(json.load(sys.stdin)["conversationId"])' \
    >"$conversation_file" || return 1
  printf '%s' "$reply" | python3 -c '
import json, sys
reply = json.load(sys.stdin)["reply"]["content"]
if "Biscuit" not in reply:
    sys.exit(f"reply does not answer the question: {reply!r}")
print(f"reply: {reply[:60]!r}")'
}

step "chat"
check "a chat turn answers (POST /v1/chat through the gateway)" chat_answers

# The browser tools' Chromium runs as the image's node user with its sandbox on: its renderers in
# namespaces of their own under seccomp-bpf, never --no-sandbox (infra/ci/browser-sandbox-check.cjs).
sandbox_check=infra/ci/browser-sandbox-check.cjs
# browser_open over tools.invoke, from inside the tools container (NATS is not published): the
# service's own Chromium opens the gateway's web UI, which CI's OUTBOUND_ALLOWED_HOSTS allows.
tools_browser_open() {
  local id
  "${compose[@]}" exec -T tools node - tool http://gateway:8080/ <"$sandbox_check" || return 1
  id=$("${compose[@]}" ps -q tools) || return 1
  echo "tools container memory now: $(podman stats --no-stream --format '{{.MemUsage}}' "$id")"
}
# The image once more, under infra/tools-seccomp.json (what Docker applies through compose.yaml)
# and with compose.yaml's capabilities: Chromium launched, chrome://sandbox read.
tools_image_sandbox() {
  podman run --rm -i --network=none --no-healthcheck --cap-drop=ALL --cap-add=SYS_CHROOT \
    --security-opt no-new-privileges --security-opt seccomp=infra/tools-seccomp.json \
    jarvis/tools:local node - launch <"$sandbox_check"
}

step "browser"
check "browser_open through tools.invoke: the tools service's Chromium opens the web UI, sandboxed" tools_browser_open
check "the tools image under infra/tools-seccomp.json, SYS_CHROOT alone: Chromium sandboxed" tools_image_sandbox

# run_code's box in the container as compose.yaml sets it up (infra/ci/sandbox-check.cjs): asked
# over tools.invoke from inside the tools container, as the orchestrator asks.
code_check=infra/ci/sandbox-check.cjs
tools_run_code() {
  "${compose[@]}" exec -T tools node - tool <"$code_check" && return 0
  # Why the service offers no run_code, when that is the failure: it logs the reason at start.
  "${compose[@]}" logs --no-color tools 2>&1 | grep -F sandbox | tail -n 3
  return 1
}
# The image once more, under infra/tools-seccomp.json with compose.yaml's capabilities and
# unmasked /proc: bubblewrap makes a box there.
tools_image_code_sandbox() {
  podman run --rm -i --network=none --no-healthcheck --cap-drop=ALL --cap-add=SYS_CHROOT \
    --security-opt no-new-privileges --security-opt seccomp=infra/tools-seccomp.json \
    --security-opt systempaths=unconfined jarvis/tools:local node - profile <"$code_check"
}

step "run_code"
check "run_code through tools.invoke: Python with numpy prints; no TCP to postgres, nats or the service's port; /proc shows only the box; no DATABASE_URL" tools_run_code
check "the tools image under infra/tools-seccomp.json, SYS_CHROOT alone, /proc unmasked: bubblewrap makes its box" tools_image_code_sandbox

# Kills a service's main process (node, under the image's init) with SIGKILL, then waits for
# its restart policy to start it again and for it to turn healthy.
kill_and_restart() {
  local service=$1 id pid node started restarts
  id=$("${compose[@]}" ps -q "$service") || return 1
  restarts=$(podman inspect --format '{{.RestartCount}}' "$id")
  pid=$(podman inspect --format '{{.State.Pid}}' "$id")
  node=$(pgrep -P "$pid" -x node || echo "$pid")
  started=$SECONDS
  kill -9 "$node" || return 1
  while [ "$(podman inspect --format '{{.RestartCount}}' "$id")" = "$restarts" ]; do
    if [ $((SECONDS - started)) -ge 60 ]; then
      echo "not restarted within 60 s: $(podman inspect --format '{{.State.Status}}' "$id")"
      return 1
    fi
    sleep 1
  done
  local restarted=$((SECONDS - started))
  # Its healthcheck run now, not a status that may date from before the kill.
  until podman healthcheck run "$id" >/dev/null 2>&1; do
    if [ $((SECONDS - started)) -ge "$healthy_within" ]; then
      echo "restarted, not healthy within ${healthy_within} s"
      return 1
    fi
    sleep 1
  done
  echo "restarted after ${restarted} s, healthy after $((SECONDS - started)) s"
}

step "kill -9"
check "orchestrator killed with kill -9 is restarted and turns healthy" kill_and_restart orchestrator
check "a chat turn answers after the restart" chat_answers

# Down (volumes kept) and up again: the conversation from before is still there.
conversation_survives() {
  local before
  before=$(cat "$conversation_file")
  [ -n "$before" ] || {
    echo "no conversation to look for: the chat check failed"
    return 1
  }
  "${compose[@]}" down >/dev/null 2>&1 || return 1
  "${compose[@]}" up -d --no-build >/dev/null 2>&1 || return 1
  wait_healthy >/dev/null || return 1
  api GET "/v1/conversations/$before/messages" | python3 -c '
import json, sys
text = json.dumps(json.load(sys.stdin))
question = sys.argv[1]
if question not in text:
    sys.exit(f"the earlier question is gone: {text[:300]}")
print(f"{text.count(question)} copies of the earlier question listed")' "$first_question"
}

step "down and up"
check "docker-compose down then up keeps the conversation" conversation_survives

# The SHA-256 of the tools service's secret key file, in its `secrets` volume.
key_digest() {
  "${compose[@]}" exec -T tools sh -c 'sha256sum "$JARVIS_SECRET_KEY_FILE"' | cut -c1-64
}

# make backup, down -v (the volumes wiped), make restore into the fresh database, up: the
# conversation is back, and the restore itself checks every table's row count against the backup.
# The secret key file comes back too: were it lost, tools would make another on its start.
backup_round_trip() {
  local before file restored key_before key_after
  before=$(cat "$conversation_file")
  key_before=$(key_digest) && [ -n "$key_before" ] || {
    echo "tools has no secret key file"
    return 1
  }
  file="$backup_dir/ci.backup"
  make --no-print-directory backup COMPOSE="${compose[*]}" OUT="$file" 2>&1 | tail -n 3 || return 1
  [ -s "$file" ] || return 1
  "${compose[@]}" down -v >/dev/null 2>&1 || return 1
  "${compose[@]}" up -d --no-build postgres >/dev/null 2>&1 || return 1
  restored=$(make --no-print-directory restore COMPOSE="${compose[*]}" FILE="$file" 2>&1) || {
    echo "$restored"
    return 1
  }
  printf '%s\n' "$restored" | grep -iE 'rows|restored' | tail -n 3
  wait_healthy >/dev/null || return 1
  api GET "/v1/conversations/$before/messages" | grep -qF "$first_question" || {
    echo "the conversation is not back after the restore"
    return 1
  }
  key_after=$(key_digest)
  [ "$key_after" = "$key_before" ] || {
    echo "the secret key file is not the one backed up"
    return 1
  }
  echo "the conversation and the secret key are back"
}

step "backup and restore"
backup_dir=$(mktemp -d)
JARVIS_BACKUP_PASSPHRASE=ci-backup-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
export JARVIS_BACKUP_PASSPHRASE
check "make backup, down -v, make restore into the fresh database: nothing lost, the secret key included" backup_round_trip

# compose.prod.yaml reads `env_file: .env.prod`: resolve it with the documented example unless a
# real one exists (then that one, left untouched).
created_env_prod=""
if [ ! -f .env.prod ]; then
  cp infra/prod.env.example .env.prod
  created_env_prod=1
fi
prod_resolves() {
  docker-compose --env-file .env.prod -f compose.yaml -f compose.prod.yaml config -q
}
check "compose.yaml + compose.prod.yaml resolve" prod_resolves

step ""
echo "image sizes:"
podman images --format '  {{.Repository}}:{{.Tag}} {{.Size}}' |
  grep -E 'jarvis/|jarvis-ci/fake|library/|pgvector' | sort
if [ "$failed" -gt 0 ]; then
  echo "container stage: $failed checks failed"
  exit 1
fi
echo "container stage: every check passed"
