"""The API's answers are gzip-compressed for a client that accepts it; event streams
are not, and still deliver each event as it happens (`haico.api.compression`)."""

from __future__ import annotations

import asyncio
import json

import httpx
from fastapi import FastAPI

from tests.history_helpers import live_server

GZIP = {"Accept-Encoding": "gzip"}
PLAIN = {"Accept-Encoding": "identity"}


async def family(client: httpx.AsyncClient, turns: int) -> str:
    r = await client.post("/api/conversations", json={"title": "compressed"})
    assert r.status_code == 201, r.text
    tid = str(r.json()["thread_id"])
    for k in range(turns):
        r = await client.post(f"/api/conversations/{tid}/turns", json={"content": f"todo: {k}"})
        assert r.status_code == 200, r.text
    return tid


async def test_the_graph_answer_is_gzip_encoded_when_the_client_accepts_it(
    client: httpx.AsyncClient,
) -> None:
    tid = await family(client, 6)
    packed = await client.get(f"/api/conversations/{tid}/graph", headers=GZIP)
    plain = await client.get(f"/api/conversations/{tid}/graph", headers=PLAIN)
    assert packed.status_code == plain.status_code == 200
    assert packed.headers["content-encoding"] == "gzip"
    assert "accept-encoding" in packed.headers["vary"].lower()
    assert packed.num_bytes_downloaded < len(packed.content) / 2
    assert "content-encoding" not in plain.headers
    assert packed.json() == plain.json()
    assert len(packed.json()["nodes"]) == 6


async def test_a_small_answer_is_sent_as_it_is(client: httpx.AsyncClient) -> None:
    r = await client.get("/api/health", headers=GZIP)
    assert r.status_code == 200
    assert "content-encoding" not in r.headers


async def test_a_compressed_format_is_sent_as_it_is(client: httpx.AsyncClient) -> None:
    """Parquet and the `.qdpx` (a ZIP) are compressed already."""
    tid = await family(client, 3)
    # a long message, so that the files are well over the size compression starts at
    words = " ".join(f"word{n * 7919 % 10007}" for n in range(600))
    r = await client.post(f"/api/conversations/{tid}/turns", json={"content": words})
    assert r.status_code == 200, r.text
    for name in ("export.parquet", "export.qdpx"):
        r = await client.get(f"/api/conversations/{tid}/{name}", headers=GZIP)
        assert r.status_code == 200, r.text
        assert len(r.content) > 1024, name
        assert "content-encoding" not in r.headers, name


async def test_a_turn_stream_is_not_compressed(client: httpx.AsyncClient) -> None:
    tid = await family(client, 0)
    r = await client.post(
        f"/api/conversations/{tid}/turns", json={"content": "todo: streamed"}, headers=GZIP
    )
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/event-stream")
    assert "content-encoding" not in r.headers
    assert "event: turn_completed" in r.text


async def test_the_event_stream_delivers_each_event_while_it_stays_open(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    tid = await family(client, 0)
    async with (
        live_server(app) as base,
        httpx.AsyncClient(base_url=base, timeout=None) as c,
        c.stream(
            "GET",
            f"/api/conversations/{tid}/events",
            params={"after": 0},
            headers=GZIP,
        ) as stream,
    ):
        assert stream.status_code == 200
        assert "content-encoding" not in stream.headers
        chunks = stream.aiter_text()
        for k in range(2):
            # one edit, then its event, read while the stream is still open (a
            # compressor would hold a small event back until the stream ends)
            r = await client.put(f"/api/conversations/{tid}/objective", json={"text": f"aim {k}"})
            assert r.status_code == 200, r.text
            seen = ""
            async with asyncio.timeout(5):
                while f"aim {k}" not in seen:
                    seen += await anext(chunks)
            data = [line[5:] for line in seen.splitlines() if line.startswith("data:")]
            assert any(f"aim {k}" in json.dumps(json.loads(d)) for d in data)
