# Stand-in for node:20-bookworm-slim, built by infra/ci/base-images.sh from Debian trixie's
# nodejs (bookworm's is 18; the project needs >= 20.19) under the official image's name, since
# no registry is reachable in CI. Only what the service Dockerfiles rely on: node and npm on the
# PATH, and a `node` user with uid 1000.
FROM localhost/jarvis-ci/trixie-node:rootfs
RUN groupadd --gid 1000 node && useradd --uid 1000 --gid node --shell /bin/bash --create-home node
# CI only: npm inside the builds reaches the registry through this machine's TLS proxy. The
# service Dockerfiles stay free of it; only CI's own base image carries the host's CA bundle.
COPY host-ca.crt /etc/ssl/certs/jarvis-ci-host-ca.crt
ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/jarvis-ci-host-ca.crt
CMD ["node"]
