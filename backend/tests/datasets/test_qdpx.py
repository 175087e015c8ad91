"""The family's REFI-QDA export on both databases: a zip whose `project.qde` is valid
against the vendored REFI-QDA Project.xsd, one TextSource per path, and every coded
selection's text exactly the coded text of its node; blind codings stay out of a
coder's export until revealed."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from lxml import etree
from pyrefiqda import RefiProject

from haico.services.datasets import qdpx
from tests.coding.helpers import API, code, family, ok

Q = {"q": qdpx.NS}


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"auth": "token"}


def project_of(body: bytes) -> etree._Element:
    with zipfile.ZipFile(io.BytesIO(body)) as z:
        assert z.namelist() == ["project.qde"]
        doc = etree.fromstring(z.read("project.qde"))
    qdpx.schema().assertValid(doc)
    return doc


def opened_by_a_reader(body: bytes, tmp_path: Path) -> list[str]:
    """Every coded selection's text, as pyrefiqda's `RefiProject.load` reads the file."""
    path = tmp_path / "export.qdpx"
    path.write_bytes(body)
    project = RefiProject.load(path, extract_dir=str(tmp_path / "x"))
    out: list[str] = []
    for src in project.sources.text_source:
        for sel in src.plain_text_selection:
            out.append(src.plain_text_content[sel.start_position : sel.end_position])
    return out


async def test_qdpx_is_valid_and_places_every_coding_on_its_text(
    app: FastAPI, client: httpx.AsyncClient, tmp_path: Path
) -> None:
    s = await family(app, client, coders=("commenter",))
    _, ch = s.coders["commenter0"]
    node2 = await ok(await client.get(f"{API}/{s.tid}/nodes/2", headers=s.owner_h))
    msg, reply = node2["user_message"], node2["reply"]
    cafe = msg.index("café")
    expected: dict[int, str] = {}
    made = await code(
        client,
        s.tid,
        2,
        s.code("pushback"),
        ch,
        span={"field": "user_message", "start": cafe, "end": cafe + 4},
        memo="the café",
    )
    expected[made["id"]] = "café"
    made = await code(
        client,
        s.tid,
        2,
        s.code("planning"),
        s.owner_h,
        span={"field": "reply", "start": 2, "end": 9},
    )
    expected[made["id"]] = reply[2:9]
    sib = await ok(await client.get(f"{API}/{s.sibling_tid}/nodes/2", headers=s.owner_h))
    made = await code(client, s.sibling_tid, 2, s.code("delegation"), s.owner_h)
    expected[made["id"]] = f"User: {sib['user_message']}\nAssistant: {sib['reply']}"
    await client.post(f"{API}/{s.tid}/nodes/1/notes", json={"text": "a note"}, headers=s.owner_h)

    r = await client.get(f"{API}/{s.tid}/export.qdpx", headers=s.owner_h)
    assert r.status_code == 200 and r.headers["content-type"] == "application/zip"
    doc = project_of(r.content)
    sources = doc.findall("q:Sources/q:TextSource", Q)
    assert len(sources) == 2  # one per path: the main line and the branch
    codes = {c.get("guid"): c.get("name") for c in doc.iterfind(".//q:Code", Q)}
    assert set(codes.values()) == {"planning", "pushback", "delegation"}
    # pushback nests under planning
    assert doc.find(".//q:Code[@name='planning']/q:Code[@name='pushback']", Q) is not None
    users = {u.get("name") for u in doc.iterfind("q:Users/q:User", Q)}
    assert s.owner.name in users and s.coders["commenter0"][0].name in users
    found: dict[str, str] = {}
    for src in sources:
        text = src.findtext("q:PlainTextContent", namespaces=Q)
        assert text is not None
        for sel in src.iterfind("q:PlainTextSelection", Q):
            start, end = int(sel.get("startPosition")), int(sel.get("endPosition"))
            found[sel.get("guid")] = text[start:end]
            ref = sel.find("q:Coding/q:CodeRef", Q).get("targetGUID")
            assert codes[ref] == sel.get("name")
    assert sorted(found.values()) == sorted(expected.values())
    assert {qdpx.guid("selection", i) for i in expected} == set(found)
    notes = [
        n.findtext("q:PlainTextContent", namespaces=Q) for n in doc.iterfind("q:Notes/q:Note", Q)
    ]
    assert sorted(notes) == ["a note", "the café"]

    # an open REFI-QDA reader from PyPI (pyrefiqda) opens it and reads the same
    read = opened_by_a_reader(r.content, tmp_path)
    assert sorted(read) == sorted(expected.values())

    # blind: the commenter's export holds their own coding only
    mine = project_of((await client.get(f"{API}/{s.tid}/export.qdpx", headers=ch)).content)
    assert len(mine.findall(".//q:PlainTextSelection", Q)) == 1


async def test_qdpx_of_a_family_without_codings_is_valid(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    s = await family(app, client, coders=())
    doc = project_of((await client.get(f"{API}/{s.tid}/export.qdpx", headers=s.owner_h)).content)
    assert doc.findall(".//q:PlainTextSelection", Q) == []


async def test_text_xml_cannot_hold_keeps_every_position(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    s = await family(app, client, coders=())
    await client.post(
        f"{API}/{s.tid}/turns", json={"content": "a\x01b\x0b café"}, headers=s.owner_h
    )
    node = await ok(await client.get(f"{API}/{s.tid}/nodes/4", headers=s.owner_h))
    start = node["user_message"].index("café")
    span = {"field": "user_message", "start": start, "end": start + 4}
    await code(client, s.tid, 4, s.code("planning"), s.owner_h, span=span)
    r = await client.get(f"{API}/{s.tid}/export.qdpx", headers=s.owner_h)
    doc = project_of(r.content)
    (sel,) = doc.findall(".//q:PlainTextSelection", Q)
    src = sel.getparent()
    text = src.findtext("q:PlainTextContent", namespaces=Q)
    assert text[int(sel.get("startPosition")) : int(sel.get("endPosition"))] == "café"
    assert "a\ufffdb\ufffd café" in text
