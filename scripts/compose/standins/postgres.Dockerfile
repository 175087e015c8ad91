# Stand-in for postgres:16: Debian's PostgreSQL 15 behind an entrypoint that does what
# the official image's does for compose (postgres-entrypoint.sh).
ARG BASE
FROM ${BASE}
RUN mkdir -p /etc/postgresql-common \
    && echo "create_main_cluster = false" > /etc/postgresql-common/createcluster.conf \
    && apt-get update \
    && apt-get install -y --no-install-recommends -o Dpkg::Options::=--force-confold postgresql-15 \
    && rm -rf /var/lib/apt/lists/* \
    && mkdir -p /var/run/postgresql /docker-entrypoint-initdb.d \
    && chown postgres:postgres /var/run/postgresql
# UTF-8, as the official image (LANG en_US.utf8): without a locale initdb would make
# an SQL_ASCII database, on which psycopg sends text parameters as bytea.
ENV PATH=/usr/lib/postgresql/15/bin:$PATH PGDATA=/var/lib/postgresql/data LANG=C.UTF-8
COPY postgres-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
VOLUME /var/lib/postgresql/data
STOPSIGNAL SIGINT
EXPOSE 5432
ENTRYPOINT ["docker-entrypoint.sh"]
CMD ["postgres"]
