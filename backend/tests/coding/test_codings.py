"""Codings through the REST API on both databases: a whole step or a span in code
points (out of range → 422), codes only from the family owner's live codes, blind
until the owner reveals, who may code, deleting one's own, 404 naming nothing for a
stranger, and the AHP annotations channel."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select

from haico.db.models import ActionLogEntry
from tests.coding.helpers import API, code, family, ok
from tests.helpers import db_of
from tests.share_helpers import grantee, new_user


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"auth": "token"}


async def test_spans_count_code_points_and_must_lie_inside_the_field(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    s = await family(app, client)
    node = await ok(await client.get(f"{API}/{s.tid}/nodes/2", headers=s.owner_h))
    message = node["user_message"]
    assert message == "Pick the ✈️ route, café first"
    start = message.index("café")  # code points: "✈️" is two of them
    span = {"field": "user_message", "start": start, "end": start + 4}
    made = await code(client, s.tid, 2, s.code("planning"), s.owner_h, span=span, memo="why")
    assert made["span"] == span and made["memo"] == "why"
    assert made["node_id"] == f"{s.tid}:2" and made["coder"] == s.owner.name
    assert message[made["span"]["start"] : made["span"]["end"]] == "café"
    whole = await code(client, s.tid, 2, s.code("delegation"), s.owner_h)
    assert whole["span"] is None

    reply_len = len(node["reply"])
    for bad in (
        {"field": "user_message", "start": 0, "end": len(message) + 1},
        {"field": "reply", "start": reply_len, "end": reply_len + 1},
        {"field": "reply", "start": 3, "end": 3},
        {"field": "reply", "start": 4, "end": 2},
    ):
        await code(client, s.tid, 2, s.code("planning"), s.owner_h, span=bad, status=422)
    end = {"field": "reply", "start": 0, "end": reply_len}
    await code(client, s.tid, 2, s.code("planning"), s.owner_h, span=end)
    # a node the thread's path does not reach
    await code(client, s.tid, 9, s.code("planning"), s.owner_h, status=404)


async def test_a_code_must_be_a_live_code_of_the_family_owners_codebooks(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    s = await family(app, client)
    _, ch = s.coders["commenter0"]
    theirs = await ok(
        await client.post(
            "/api/codebooks", json={"name": "mine", "codes": [{"name": "x"}]}, headers=ch
        ),
        201,
    )
    # the commenter's own codebook is not this family's
    await code(client, s.tid, 1, theirs["codes"][0]["id"], ch, status=422)
    await ok(
        await client.patch(
            f"/api/codebooks/{s.book['id']}",
            json={"retire": [s.code("delegation")]},
            headers=s.owner_h,
        )
    )
    await code(client, s.tid, 1, s.code("delegation"), ch, status=422)
    await code(client, s.tid, 1, s.code("planning"), ch)


async def test_coding_is_blind_until_the_owner_reveals(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    s = await family(app, client, coders=("commenter", "editor"))
    (_, ah), (_, bh) = s.coders["commenter0"], s.coders["editor1"]
    ca = await code(client, s.tid, 1, s.code("planning"), ah)
    cb = await code(client, s.tid, 1, s.code("pushback"), bh)
    co = await code(client, s.tid, 2, s.code("planning"), s.owner_h)

    async def seen(h: dict[str, str]) -> set[int]:
        return {c["id"] for c in await ok(await client.get(f"{API}/{s.tid}/codings", headers=h))}

    assert await seen(ah) == {ca["id"]}
    assert await seen(bh) == {cb["id"]}
    assert await seen(s.owner_h) == {ca["id"], cb["id"], co["id"]}
    # a branch's listing is the family's
    r = await client.get(f"{API}/{s.sibling_tid}/codings", headers=ah)
    assert {c["id"] for c in await ok(r)} == {ca["id"]}
    # only the owner reveals
    r = await client.patch(f"{API}/{s.tid}", json={"reveal_codings": True}, headers=bh)
    assert r.status_code == 403
    conv = await ok(
        await client.patch(f"{API}/{s.tid}", json={"reveal_codings": True}, headers=s.owner_h)
    )
    assert conv["reveal_codings"] is True
    assert await seen(ah) == await seen(bh) == {ca["id"], cb["id"], co["id"]}
    got = await ok(await client.get(f"{API}/{s.tid}", headers=ah))
    assert got["reveal_codings"] is True
    await ok(
        await client.patch(f"{API}/{s.tid}", json={"reveal_codings": False}, headers=s.owner_h)
    )
    assert await seen(ah) == {ca["id"]}


async def test_each_reader_is_told_which_codings_are_theirs(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    s = await family(app, client, coders=("commenter",))
    _, ch = s.coders["commenter0"]
    made = await code(client, s.tid, 1, s.code("planning"), ch)
    assert made["mine"] is True
    theirs = await code(client, s.tid, 2, s.code("planning"), s.owner_h)
    await ok(await client.patch(f"{API}/{s.tid}", json={"reveal_codings": True}, headers=s.owner_h))

    async def mine(h: dict[str, str]) -> dict[int, bool]:
        listed = await ok(await client.get(f"{API}/{s.tid}/codings", headers=h))
        return {c["id"]: c["mine"] for c in listed}

    assert await mine(ch) == {made["id"]: True, theirs["id"]: False}
    assert await mine(s.owner_h) == {made["id"]: False, theirs["id"]: True}


async def test_who_may_code_and_delete(app: FastAPI, client: httpx.AsyncClient) -> None:
    s = await family(app, client, coders=("commenter", "viewer"))
    (_, ch), (_, vh) = s.coders["commenter0"], s.coders["viewer1"]
    await code(client, s.tid, 1, s.code("planning"), vh, status=403)
    link = await grantee(app, client, _fam(s), "link-commenter")
    by_link = await code(client, s.tid, 1, s.code("planning"), link)
    mine = await code(client, s.tid, 1, s.code("planning"), ch)
    _, stranger = await new_user(app, "str")
    await code(client, s.tid, 1, s.code("planning"), stranger, status=403)

    # another's coding: 403 to a reader of the family, 404 naming nothing to a stranger
    r = await client.delete(f"/api/codings/{mine['id']}", headers=s.owner_h)
    assert r.status_code == 403
    r = await client.delete(f"/api/codings/{mine['id']}", headers=stranger)
    assert r.status_code == 404 and s.tid not in r.text
    assert (await client.delete("/api/codings/999999", headers=ch)).status_code == 404
    assert (await client.delete(f"/api/codings/{mine['id']}", headers=ch)).status_code == 204
    assert (await client.delete(f"/api/codings/{by_link['id']}", headers=link)).status_code == 204
    assert await ok(await client.get(f"{API}/{s.tid}/codings", headers=s.owner_h)) == []


def _fam(s: Any) -> Any:
    from tests.coding.helpers import _Fam

    return _Fam(s.owner, s.owner_h, s.tid)


async def test_codings_travel_on_the_annotations_channel(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    s = await family(app, client)
    made = await code(client, s.tid, 3, s.code("planning"), s.owner_h, memo="m")
    await client.delete(f"/api/codings/{made['id']}", headers=s.owner_h)
    async with db_of(app).read() as db:
        rows = (
            await db.execute(
                select(ActionLogEntry.channel, ActionLogEntry.action)
                .where(
                    ActionLogEntry.channel.like("%/annotations"),
                    ActionLogEntry.root_thread_id == s.tid,
                )
                .order_by(ActionLogEntry.seq)
            )
        ).all()
    (ch1, set_), (ch2, removed) = [(r.channel, r.action) for r in rows]
    assert ch1 == ch2 and ch1.endswith("/annotations")
    ann = set_["annotation"]
    assert set_["type"] == "annotations/set" and ann["id"] == f"coding-{made['id']}"
    assert ann["origin"]["turnId"] == f"{s.tid}:3"
    assert ann["entries"][0]["text"] == "m"
    assert ann["entries"][0]["_meta"]["haico/codeId"] == s.code("planning")
    assert ann["_meta"]["haico/coderId"] == s.owner.id
    assert removed == {
        "type": "annotations/removed",
        "annotationId": f"coding-{made['id']}",
        "_meta": {"haico/coderId": s.owner.id},
    }


async def test_a_coding_whose_action_cannot_be_logged_is_not_kept(
    app: FastAPI, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The row and its annotations action are one transaction: a failure writing the
    action (injected) leaves no coding, and the delete's leaves the coding in place."""
    from haico.services.coding import codings as service

    s = await family(app, client)
    kept = await code(client, s.tid, 1, s.code("planning"), s.owner_h)

    async def broken(*_: Any, **__: Any) -> None:
        raise RuntimeError("the log is away")

    monkeypatch.setattr(service.action_log, "append_rows", broken)
    body = {"code_id": s.code("planning")}
    r = await client.post(f"{API}/{s.tid}/nodes/2/codings", json=body, headers=s.owner_h)
    assert r.status_code == 500
    r = await client.delete(f"/api/codings/{kept['id']}", headers=s.owner_h)
    assert r.status_code == 500
    monkeypatch.undo()
    listed = await ok(await client.get(f"{API}/{s.tid}/codings", headers=s.owner_h))
    assert [c["id"] for c in listed] == [kept["id"]]
