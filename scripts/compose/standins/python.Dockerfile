# Stand-in for python:3.11-slim-bookworm: Debian's Python 3.11 with venv and pip as
# `python`, built on the debootstrap root (scripts/compose/test-compose.sh).
ARG BASE
FROM ${BASE}
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3.11 python3.11-venv python3-pip \
    && ln -s /usr/bin/python3.11 /usr/local/bin/python \
    && rm -rf /var/lib/apt/lists/*
CMD ["python3.11"]
