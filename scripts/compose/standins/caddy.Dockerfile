# Stand-in for caddy:2: Debian's Caddy (2.6) with wget for the healthcheck, run as the
# official image runs it.
ARG BASE
FROM ${BASE}
RUN apt-get update \
    && apt-get install -y --no-install-recommends caddy wget \
    && rm -rf /var/lib/apt/lists/* \
    && mkdir -p /etc/caddy /data /config
ENV XDG_CONFIG_HOME=/config XDG_DATA_HOME=/data
EXPOSE 80 443
CMD ["caddy", "run", "--config", "/etc/caddy/Caddyfile", "--adapter", "caddyfile"]
