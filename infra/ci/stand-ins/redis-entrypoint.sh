#!/bin/sh
# What the official redis image's entrypoint does for compose.yaml's command: own /data, drop
# to the redis user, and run redis-server without protected mode (it is reached only on the
# compose network).
set -e
if [ "$1" = redis-server ] && [ "$(id -u)" = 0 ]; then
  chown -R redis:redis /data
  exec setpriv --reuid=redis --regid=redis --init-groups "$@" --protected-mode no
fi
exec "$@"
