#!/usr/bin/env bash
# Makes a Debian root filesystem from Debian's archive, for CI's stand-in images and its
# PostgreSQL 17 chroot: no registry is reachable, so nothing prebuilt is pulled.
#   infra/ci/debian-rootfs.sh SUITE DIR [PACKAGE...]
# A DIR already made with the same suite and packages is kept as it is, so a second run costs
# nothing; a different list makes it anew.
set -euo pipefail

if [ $# -lt 2 ]; then
  echo "usage: $0 SUITE DIR [PACKAGE...]" >&2
  exit 64
fi
suite=$1
dir=$2
shift 2
packages=$(printf '%s\n' "$@" | sort -u | paste -sd, -)
stamp="$suite ${packages}"

if [ -f "$dir/.jarvis-rootfs" ] && [ "$(cat "$dir/.jarvis-rootfs")" = "$stamp" ]; then
  exit 0
fi

if ! command -v debootstrap >/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap
fi

# The archive this machine's apt already uses (the first deb URI that serves Debian itself).
mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.sources 2>/dev/null \
  | grep -oE '^(URIs:|deb) +https?://[^ ]+' | awk '{print $2}' | grep -v security | head -n 1 || true)
mirror=${mirror:-http://deb.debian.org/debian}

rm -rf "$dir.partial"
mkdir -p "$(dirname "$dir")"
debootstrap --variant=minbase "$suite" "$dir.partial" "$mirror" >"$dir.debootstrap.log" 2>&1 || {
  tail -n 20 "$dir.debootstrap.log" >&2
  exit 1
}
# Packages installed later inside it come from the same archive.
echo "deb $mirror $suite main" >"$dir.partial/etc/apt/sources.list"
# The packages go in with apt inside it rather than debootstrap's --include, whose resolver
# misses dependencies that apt finds (trixie's npm fails to configure that way). No service is
# started inside (policy-rc.d), and /proc is there for the maintainer scripts.
if [ $# -gt 0 ]; then
  printf '#!/bin/sh\nexit 101\n' >"$dir.partial/usr/sbin/policy-rc.d"
  chmod +x "$dir.partial/usr/sbin/policy-rc.d"
  mount -t proc proc "$dir.partial/proc"
  trap 'umount "$dir.partial/proc" 2>/dev/null || true' EXIT
  {
    chroot "$dir.partial" apt-get update -qq &&
      DEBIAN_FRONTEND=noninteractive chroot "$dir.partial" \
        apt-get install -y -qq --no-install-recommends "$@" &&
      chroot "$dir.partial" apt-get clean
  } >>"$dir.debootstrap.log" 2>&1 || {
    tail -n 20 "$dir.debootstrap.log" >&2
    exit 1
  }
  umount "$dir.partial/proc"
  trap - EXIT
  rm -f "$dir.partial/usr/sbin/policy-rc.d"
  rm -rf "$dir.partial/var/lib/apt/lists/"*
fi
echo "$stamp" >"$dir.partial/.jarvis-rootfs"
rm -rf "$dir"
mv "$dir.partial" "$dir"
rm -f "$dir.debootstrap.log"
