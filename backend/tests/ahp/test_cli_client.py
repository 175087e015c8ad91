"""`haico ahp URL`, the debugging client, against a real server process on both
databases: it follows the first session's chat and prints a REST turn's actions as
JSON lines with their serverSeq; Ctrl-C ends it cleanly."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from haico.ahp.cli_client import ws_url
from tests.ahp.live import chat_of
from tests.server import Server
from tests.sse_client import send_turn

Json = dict[str, Any]


def test_ws_url() -> None:
    assert ws_url("http://127.0.0.1:8000") == "ws://127.0.0.1:8000/ahp"
    assert ws_url("https://h.example/") == "wss://h.example/ahp"
    assert ws_url("ws://h:1/ahp?token=x") == "ws://h:1/ahp?token=x"


@pytest.fixture
async def server(server_env: dict[str, str]) -> AsyncIterator[Server]:
    srv = Server(server_env)
    await srv.start()
    yield srv
    srv.stop()


async def _line(stream: asyncio.StreamReader, within: float = 30) -> str:
    raw = await asyncio.wait_for(stream.readline(), within)
    assert raw, "the client exited"
    return raw.decode().rstrip("\n")


async def test_the_cli_client_prints_a_rest_turn(
    server: Server, server_env: dict[str, str]
) -> None:
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as c:
        r = await c.post("/api/conversations", json={"title": "watched"})
        tid = r.json()["thread_id"]
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "haico.cli.main",
            "ahp",
            server.url,
            env=server_env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            assert proc.stdout is not None and proc.stderr is not None
            said: list[str] = []
            while not said or not said[-1].startswith("# subscribed"):
                said.append(await _line(proc.stderr))
            assert said[-1].startswith(f"# subscribed to {chat_of(tid)}"), said
            status, _, body = await send_turn(c, tid, "objective: watched from the CLI")
            assert status == 200, body
            lines: list[Json] = []
            while not any(
                line.get("action", {}).get("type") == "chat/turnComplete" for line in lines
            ):
                lines.append(json.loads(await _line(proc.stdout)))
            kinds = [line["action"]["type"] for line in lines if "action" in line]
            assert kinds[0] == "chat/turnStarted" and kinds[-1] == "chat/turnComplete"
            started = next(x for x in lines if x["action"]["type"] == "chat/turnStarted")
            assert started["action"]["turnId"] == f"{tid}:1"
            assert started["action"]["message"]["text"] == "objective: watched from the CLI"
            seqs = [line["serverSeq"] for line in lines if "action" in line]
            assert all(line["channel"] == chat_of(tid) for line in lines if "action" in line)
            assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
            proc.send_signal(signal.SIGINT)
            assert await asyncio.wait_for(proc.wait(), 10) == 0
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
