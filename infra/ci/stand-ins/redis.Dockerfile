# Stand-in for redis:7-alpine, built by infra/ci/base-images.sh from Debian trixie's
# redis-server. Like the official image, it runs as the redis user in /data and turns protected
# mode off (Debian's default keeps it on, and would refuse every client on the compose network).
FROM localhost/jarvis-ci/trixie-infra:rootfs
RUN mkdir -p /data && chown redis:redis /data
COPY redis-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
VOLUME /data
WORKDIR /data
EXPOSE 6379
ENTRYPOINT ["docker-entrypoint.sh"]
CMD ["redis-server"]
