# Stand-in for nats:2.10-alpine, built by infra/ci/base-images.sh from Debian trixie's
# nats-server; wget is there for compose.yaml's healthcheck, as busybox's is in the official one.
FROM localhost/jarvis-ci/trixie-infra:rootfs
EXPOSE 4222 8222
CMD ["nats-server"]
