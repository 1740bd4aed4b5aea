#!/usr/bin/env bash
# Installs and configures rootful podman on a fresh Debian machine the way CI needs it, then
# starts its Docker-compatible socket and a healthcheck loop in the background.
#   infra/ci/podman-setup.sh          install, configure, start (safe to run again)
#   infra/ci/podman-setup.sh stop     stop the socket and the loop
#   source "$(infra/ci/podman-setup.sh env)"   podman and docker-compose use this setup
# Everything lives in one directory of its own (JARVIS_PODMAN_DIR, /var/lib/jarvis-podman by
# default): the machine's own container settings, if any, are left alone.
set -euo pipefail

dir=${JARVIS_PODMAN_DIR:-/var/lib/jarvis-podman}
envfile=$dir/env.sh

write_config() {
  mkdir -p "$dir/storage" "$dir/run" "$dir/netconf"
  cat >"$dir/storage.conf" <<EOF
[storage]
driver = "overlay"
graphroot = "$dir/storage"
runroot = "$dir/run"
EOF
  # runc: crun refuses hybrid cgroups ("cgroups in hybrid mode not supported").
  # cgroupfs: PID 1 is not systemd. events_logger file: no journald either.
  # ulimits: podman's default nofile=1048576 needs a capability these machines lack, and podman
  # lowers its own nproc limit to 32768 before it starts the runtime.
  cat >"$dir/containers.conf" <<EOF
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
[network]
network_backend = "netavark"
network_config_dir = "$dir/netconf"
[engine]
# compose names images as users write them (jarvis/gateway:local); podman's socket would otherwise
# look for them on docker.io, where `podman build` never puts them.
compat_api_enforce_docker_hub = false
cgroup_manager = "cgroupfs"
events_logger = "file"
runtime = "runc"
EOF
  cat >"$envfile" <<EOF
export CONTAINERS_CONF=$dir/containers.conf
export CONTAINERS_STORAGE_CONF=$dir/storage.conf
export DOCKER_HOST=unix://$dir/podman.sock
EOF
}

# Is the process whose id is in this file still running?
is_running() {
  [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null
}

stop() {
  local pidfile
  for pidfile in "$dir/healthcheck.pid" "$dir/service.pid"; do
    if is_running "$pidfile"; then
      kill "$(cat "$pidfile")"
    fi
    rm -f "$pidfile"
  done
  rm -f "$dir/podman.sock"
}

case "${1:-start}" in
  env)
    echo "$envfile"
    exit 0
    ;;
  stop)
    stop
    exit 0
    ;;
  start) ;;
  *)
    echo "usage: $0 [start|stop|env]" >&2
    exit 64
    ;;
esac

need_apt=()
# netavark and aardvark-dns: compose's services find each other by name (Debian's podman falls back
# to CNI without them, which resolves no names). netavark sets up bridge networks with iptables,
# which it only recommends, and a build's RUN steps fail with "netavark: No such file or
# directory" without it.
for package in podman buildah runc fuse-overlayfs slirp4netns uidmap catatonit netavark aardvark-dns iptables \
  debootstrap docker-compose; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' || need_apt+=("$package")
done
if [ ${#need_apt[@]} -gt 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_apt[@]}"
fi

write_config
# shellcheck source=/dev/null
source "$envfile"

if ! is_running "$dir/service.pid"; then
  rm -f "$dir/podman.sock"
  # --time=0: the socket stays up until stopped, not only while a client is connected.
  setsid podman system service --time=0 "unix://$dir/podman.sock" >"$dir/service.log" 2>&1 &
  echo $! >"$dir/service.pid"
fi
for _ in $(seq 1 50); do
  [ -S "$dir/podman.sock" ] && break
  sleep 0.2
done
[ -S "$dir/podman.sock" ] || {
  cat "$dir/service.log" >&2
  exit 1
}

# podman runs healthchecks from systemd timers, and there is no systemd here: without this loop
# no container ever turns healthy, and `condition: service_healthy` waits forever. It runs the
# checks of every container compose started (they carry its project label).
if ! is_running "$dir/healthcheck.pid"; then
  setsid bash -c '
    while sleep 3; do
      for id in $(podman ps -q --filter label=com.docker.compose.project); do
        podman healthcheck run "$id" >/dev/null 2>&1 || true
      done
    done' >/dev/null 2>&1 &
  echo $! >"$dir/healthcheck.pid"
fi
echo "podman ready: source $envfile"
