"""Coding through `haico.client` against a live `haico serve`, on SQLite and on
PostgreSQL: a codebook, a span coding, agreement's refusal of one coder, a judgment
of two siblings, and the family's datasets as bytes."""

from __future__ import annotations

import asyncio
import io
import json
import zipfile

import pytest

from haico.client import Client, HaicoError
from tests.server import Server


def coding_session(url: str) -> None:
    with Client(url) as haico:
        tid = haico.create_conversation(title="Coded").thread_id
        haico.say(tid, "objective: a café plan")
        branch = haico.branch(tid, 0, reason="again")
        haico.say(branch.thread_id, "objective: another plan")
        book = haico.create_codebook("codes", [{"name": "plan"}, {"name": "aim", "parent": "plan"}])
        plan = book.codes[0].id
        assert book.codes[1].parent_id == plan
        assert [b.id for b in haico.codebooks()] == [book.id]
        book = haico.edit_codebook(book.id, retire=[book.codes[1].id])
        assert book.codes[1].retired
        coding = haico.code(tid, 1, plan, span=("user_message", 13, 17), memo="the café")
        assert coding.span is not None and (coding.span.start, coding.span.end) == (13, 17)
        assert [c.id for c in haico.codings(tid)] == [coding.id]
        with pytest.raises(HaicoError) as one:
            haico.agreement(tid)
        assert one.value.status == 422
        judgment = haico.judge(tid, f"{tid}:1", f"{branch.thread_id}:1", "b", criterion="clear")
        assert [j.id for j in haico.judgments(tid)] == [judgment.id]
        with zipfile.ZipFile(io.BytesIO(haico.dataset(tid, "qdpx"))) as z:
            assert z.namelist() == ["project.qde"]
        lines = haico.dataset(tid, "preferences").decode().splitlines()
        assert json.loads(lines[0])["criterion"] == "clear"
        assert haico.dataset(tid, "parquet")[:4] == b"PAR1"
        haico.delete_coding(coding.id)
        assert haico.codings(tid) == []


async def test_coding_through_the_client(server_env: dict[str, str]) -> None:
    server = Server(server_env)
    await server.start()
    try:
        await asyncio.to_thread(coding_session, server.url)
    finally:
        server.stop()
