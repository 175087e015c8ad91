"""No log line carries a credential: the real server, in token mode, handed tokens in
query strings (the way a client that cannot set a header passes one), their names
percent-encoded too; and a request that ends in a 500 is logged with its traceback
but nothing it carried."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import os
import re
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from haico.config import Settings
from haico.db.engine import Database
from haico.process.log_redaction import FORMAT, RedactCredentials
from haico.services.access import users
from haico.services.workspace import edits as workspace_edits
from tests.server import Server

INITIALIZE = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"channel": "ahp-root://", "protocolVersions": ["1.0.0"], "clientId": "t"},
    }
)


async def _logged(server: Server, *lines: str) -> str:
    """The server's log once it holds every one of `lines` (it writes them as it
    answers, not before the client sees the answer)."""
    assert server.log is not None
    deadline = asyncio.get_running_loop().time() + 10
    while True:
        text = server.log.read_text(errors="replace")
        missing = [line for line in lines if line not in text]
        if not missing or asyncio.get_running_loop().time() > deadline:
            assert not missing, f"not logged: {missing}\n{text}"
            return text
        await asyncio.sleep(0.05)


async def _token_of_a_new_user(data_dir: Path) -> str:
    db = Database(Settings(data_dir=data_dir).sql_url)
    try:
        _, token = await users.create(db, name="ana")
    finally:
        await db.dispose()
    return token


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[Server]:
    # Logging does not depend on the database: SQLite only, one server.
    env = {**os.environ, "HAICO_DATA_DIR": str(tmp_path / "srv"), "HAICO_AUTH": "token"}
    env.pop("HAICO_DATABASE_URL", None)
    env.pop("HAICO_TEST_SERVER_LOG", None)  # the test reads this server's own log
    srv = Server(env)
    await srv.start()
    try:
        yield srv
    finally:
        srv.stop()


async def test_tokens_in_query_strings_are_redacted_in_every_log_line(
    server: Server, tmp_path: Path
) -> None:
    token = await _token_of_a_new_user(tmp_path / "srv")
    wrong = "hk_" + "w" * 43
    ws_url = server.url.replace("http://", "ws://") + "/ahp"
    async with connect(f"{ws_url}?token={token}") as ws:
        await ws.send(INITIALIZE)
        assert "result" in json.loads(await ws.recv())
    with pytest.raises(InvalidStatus):
        async with connect(f"{ws_url}?token={wrong}"):
            pass
    async with httpx.AsyncClient(base_url=server.url) as c:
        r = await c.get("/api/conversations", params={"token": token, "access_token": token})
        assert r.status_code == 401
        r = await c.get("/api/health", params={"x": "1", "token": wrong})
        assert r.status_code == 200

    log = await _logged(
        server,
        '"WebSocket /ahp?token=***" [accepted]',
        '"WebSocket /ahp?token=***" 403',
        '"GET /api/conversations?token=***&access_token=*** HTTP/1.1" 401',
        '"GET /api/health?x=1&token=*** HTTP/1.1" 200',
    )
    assert token not in log and wrong not in log
    assert re.search(r"hk_[A-Za-z0-9_-]{8}", log) is None, log

    # The token in the handshake's subprotocols instead: found, never echoed or logged.
    async with connect(ws_url, subprotocols=["ahp", f"bearer.{token}"]) as ws:  # type: ignore[list-item]
        assert ws.subprotocol == "ahp"
        await ws.send(INITIALIZE)
        assert json.loads(await ws.recv())["result"]["protocolVersion"] == "1.0.0"
    log = await _logged(server, '"WebSocket /ahp" [accepted]')
    assert token not in log


def _line(msg: str, *args: object) -> str:
    record = logging.LogRecord("haico.api", logging.INFO, __file__, 1, msg, args, None)
    assert RedactCredentials().filter(record)
    return record.getMessage()


def test_the_filter_redacts_a_credential_however_the_line_is_built() -> None:
    assert _line("GET %s", "/ahp?token=abc&x=1") == "GET /ahp?token=***&x=1"
    # the name in the template, the value in an argument
    assert _line("GET /ahp?token=%s&x=%d", "abc", 1) == "GET /ahp?token=***&x=1"
    assert _line("token %(t)s", {"t": "hk_0123456789abcdef"}) == "token ***"
    assert _line("/a?API_KEY=k1 /b?password=p#f") == "/a?API_KEY=*** /b?password=***#f"
    assert _line("?tokens=2&monkey=3") == "?tokens=2&monkey=3"
    # a share link's token, in `?share=` and anywhere else
    assert _line("GET /api/conversations/th_1?share=%s", "sh_0123456789") == (
        "GET /api/conversations/th_1?share=***"
    )
    assert _line("link %s revoked", "sh_0123456789abcdef") == "link *** revoked"
    assert _line("push_abcdefghij fresh_abcdefghij") == "push_abcdefghij fresh_abcdefghij"


async def test_credentials_behind_percent_encoded_names_are_redacted(
    server: Server, tmp_path: Path
) -> None:
    token = await _token_of_a_new_user(tmp_path / "srv")
    encoded = token.replace("_", "%5F", 1)
    share = "sh%5F" + "q" * 30
    ws_url = server.url.replace("http://", "ws://") + "/ahp"
    # The name percent-encoded, as the server decodes it: it authenticates.
    async with connect(f"{ws_url}?t%6Fken={encoded}") as ws:
        await ws.send(INITIALIZE)
        assert "result" in json.loads(await ws.recv())
    async with httpx.AsyncClient(base_url=server.url) as c:
        r = await c.get(f"/api/health?sh%61re={share}&T%4FKEN={encoded}&x=1")
        assert r.status_code == 200
    log = await _logged(
        server,
        '"WebSocket /ahp?t%6Fken=***" [accepted]',
        '"GET /api/health?sh%61re=***&T%4FKEN=***&x=1 HTTP/1.1" 200',
    )
    assert token not in log and encoded not in log and share not in log
    assert token.removeprefix("hk_") not in log


@pytest.mark.parametrize("backend", ["sqlite"])  # logging is the same on both
async def test_a_500_is_logged_without_what_the_request_carried(
    app: FastAPI, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failure whose message quotes the request (as a driver error quoting a
    statement's parameters would): the log keeps where it failed, not what was sent."""
    secret = "hk_" + "t" * 40
    text = "the confidential document zq-marker"

    async def failing(*_: object, content: str, **__: object) -> None:
        raise RuntimeError(f"could not store {content!r}")

    monkeypatch.setattr(workspace_edits, "put_document", failing)
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(logging.Formatter(FORMAT))
    handler.addFilter(RedactCredentials())
    logging.getLogger().addHandler(handler)
    try:
        tid = (await client.post("/api/conversations", json={"title": "t"})).json()["thread_id"]
        r = await client.put(
            f"/api/conversations/{tid}/document?share={secret}",
            json={"content": f"{text} {secret}"},
        )
    finally:
        logging.getLogger().removeHandler(handler)
    assert r.status_code == 500 and "zq-marker" not in r.text
    log = out.getvalue()
    assert "unexpected error" in log and "Traceback" in log and "in failing" in log
    assert "RuntimeError" in log
    assert "zq-marker" not in log and secret not in log, log
