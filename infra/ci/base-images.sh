#!/usr/bin/env bash
# Makes the images that the service Dockerfiles and compose.yaml start FROM, under their exact
# names, from Debian trixie's packages: no registry is reachable in CI, so nothing is pulled.
#   infra/ci/base-images.sh        (after infra/ci/podman-setup.sh)
# An image already made from the same recipe (its files in infra/ci/stand-ins and the packages
# below) is kept, so a second run costs nothing.
set -euo pipefail
cd "$(dirname "$0")"
dir=${JARVIS_PODMAN_DIR:-/var/lib/jarvis-podman}
# shellcheck source=/dev/null
source "$(./podman-setup.sh env)"

node_packages=(nodejs npm ca-certificates)
# wget: compose.yaml's NATS healthcheck (busybox's wget in the official image).
infra_packages=(postgresql-17 postgresql-17-pgvector nats-server redis-server wget)

# The recipe an image was made from, stored as its label: a changed recipe makes it anew.
recipe=$(cat ./stand-ins/* ./base-images.sh | sha256sum | cut -c1-16)

# is_current IMAGE RECIPE
is_current() {
  [ "$(podman image inspect --format '{{index .Labels "jarvis.ci.recipe"}}' "$1" 2>/dev/null)" = "$2" ]
}

# rootfs NAME PACKAGE...: a trixie root filesystem with the packages, imported as an image.
rootfs() {
  local name=$1 image="localhost/jarvis-ci/trixie-$1:rootfs" packages
  shift
  packages=$(echo "$*" | sha256sum | cut -c1-16)
  if is_current "$image" "$packages"; then return; fi
  ./debian-rootfs.sh trixie "$dir/rootfs/$name" "$@"
  tar -C "$dir/rootfs/$name" -c . |
    podman import --quiet --change "LABEL jarvis.ci.recipe=$packages" --change 'CMD ["/bin/bash"]' - "$image" >/dev/null
  echo "imported $image"
}

# stand_in NAME FILE: builds stand-ins/FILE as the image NAME.
stand_in() {
  local name=$1 file=$2 context
  if is_current "$name" "$recipe"; then
    echo "kept $name"
    return
  fi
  context=$(mktemp -d)
  cp ./stand-ins/* "$context/"
  # Only the node stand-in carries the host's CA bundle (see node.Dockerfile).
  cp /etc/ssl/certs/ca-certificates.crt "$context/host-ca.crt"
  # --format docker: the OCI format drops HEALTHCHECK and would lose the images' own.
  podman build --quiet --format docker --pull=never --label "jarvis.ci.recipe=$recipe" \
    -f "$context/$file" -t "$name" "$context" >/dev/null
  rm -rf "$context"
  echo "built $name"
}

rootfs node "${node_packages[@]}"
rootfs infra "${infra_packages[@]}"
stand_in docker.io/library/node:20-bookworm-slim node.Dockerfile
stand_in docker.io/pgvector/pgvector:pg17 postgres.Dockerfile
stand_in docker.io/library/nats:2.10-alpine nats.Dockerfile
stand_in docker.io/library/redis:7-alpine redis.Dockerfile
