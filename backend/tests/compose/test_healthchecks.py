"""The stack's healthchecks say what `depends_on: condition: service_healthy` needs."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from tests.compose.conftest import SESSION, docker, new_stack


def test_the_database_is_healthy_only_once_its_database_exists(tmp_path: Path) -> None:
    """On a first start the image's entrypoint runs a temporary server (on its socket
    only) while it creates the role and the database, then restarts it for real. The
    app, which waits for the db service to be healthy, must not start before the
    database `haico` exists on the server it will connect to. Here the first start is
    held in its init phase by an init script, and the db service's own healthcheck
    command (read from `docker compose config`) is run in it: it fails while the
    temporary server runs (pg_isready, the healthcheck before, says yes then), and
    passes once the real server is up."""
    stack = new_stack("health", ["docker-compose.yml"])
    check = stack.config()["services"]["db"]["healthcheck"]["test"]
    assert check[0] == "CMD-SHELL", check
    image = os.environ.get("HAICO_POSTGRES_IMAGE") or "postgres:16"
    hold = tmp_path / "initdb"
    hold.mkdir()
    (hold / "hold.sh").write_text("touch /tmp/holding\nsleep 8\n")
    (hold / "hold.sh").chmod(0o755)
    name = f"haico-test-{SESSION}-initdb"
    docker(
        "run", "-d", "--name", name,
        "-e", "POSTGRES_USER=haico", "-e", "POSTGRES_PASSWORD=haico", "-e", "POSTGRES_DB=haico",
        "-v", f"{hold}:/docker-entrypoint-initdb.d:ro",
        image,
    )  # fmt: skip

    def in_db(command: str) -> int:
        return subprocess.run(
            ["docker", "exec", name, "sh", "-c", command], capture_output=True, check=False
        ).returncode

    try:
        deadline = time.monotonic() + 60
        while in_db("test -e /tmp/holding") != 0:
            assert time.monotonic() < deadline, docker("logs", name)
            time.sleep(0.2)
        # The temporary server answers on its socket: the old check said healthy here.
        assert in_db("pg_isready -U haico -d haico") == 0
        assert in_db(check[1]) != 0, "healthy while the entrypoint is still initialising"
        deadline = time.monotonic() + 60
        while in_db(check[1]) != 0:
            assert time.monotonic() < deadline, docker("logs", name)
            time.sleep(0.2)
        assert in_db("psql -h 127.0.0.1 -U haico -d haico -Atc 'SELECT current_database()'") == 0
    finally:
        docker("rm", "-f", "-v", name, check=False)
