# Stand-in for pgvector/pgvector:pg17, built by infra/ci/base-images.sh from Debian trixie's
# postgresql-17 and postgresql-17-pgvector. Its entrypoint does what the official one does for
# compose.yaml: POSTGRES_USER/PASSWORD/DB, scripts in /docker-entrypoint-initdb.d on first start,
# data in /var/lib/postgresql/data.
FROM localhost/jarvis-ci/trixie-infra:rootfs
ENV PATH=/usr/lib/postgresql/17/bin:$PATH PGDATA=/var/lib/postgresql/data LANG=C.UTF-8
RUN mkdir -p /docker-entrypoint-initdb.d "$PGDATA" /var/run/postgresql \
 && chown postgres:postgres "$PGDATA" /var/run/postgresql
COPY postgres-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
VOLUME /var/lib/postgresql/data
EXPOSE 5432
STOPSIGNAL SIGINT
ENTRYPOINT ["docker-entrypoint.sh"]
CMD ["postgres"]
