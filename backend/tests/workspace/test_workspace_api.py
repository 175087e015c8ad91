"""The workspace surfaces through the REST API, on both storage backends."""

from __future__ import annotations

import httpx
import pytest


@pytest.fixture
async def tid(client: httpx.AsyncClient) -> str:
    r = await client.post("/api/conversations", json={"title": "W"})
    return str(r.json()["thread_id"])


async def test_empty_workspace(client: httpx.AsyncClient, tid: str) -> None:
    ws = (await client.get(f"/api/conversations/{tid}/workspace")).json()
    assert ws == {
        "objective": None,
        "document": None,
        "preferences": [],
        "todos": [],
        "artifacts": [],
        "rejected": [],
    }


async def test_objective_and_document(client: httpx.AsyncClient, tid: str) -> None:
    r = await client.put(f"/api/conversations/{tid}/objective", json={"text": "Write a poem"})
    assert r.status_code == 200 and r.json()["objective"] == "Write a poem"
    r = await client.put(
        f"/api/conversations/{tid}/document", json={"title": "Poem", "content": "Roses"}
    )
    assert r.json()["document"] == {"title": "Poem", "content": "Roses"}
    # title omitted keeps the old one
    r = await client.put(f"/api/conversations/{tid}/document", json={"content": "Violets"})
    assert r.json()["document"] == {"title": "Poem", "content": "Violets"}
    ws = (await client.get(f"/api/conversations/{tid}/workspace")).json()
    assert ws["objective"] == "Write a poem" and ws["document"]["content"] == "Violets"
    r = await client.put(f"/api/conversations/{tid}/objective", json={"text": None})
    assert r.json()["objective"] is None


async def test_preferences_lock_reorder_delete(client: httpx.AsyncClient, tid: str) -> None:
    base = f"/api/conversations/{tid}/preferences"
    ids = []
    for text in ("short", "formal", "no jargon"):
        r = await client.post(base, json={"text": text})
        assert r.status_code == 201
        ids.append(r.json()["id"])
    r = await client.patch(f"{base}/{ids[1]}", json={"locked": True})
    assert r.json()["locked"] is True
    r = await client.patch(f"{base}/{ids[2]}", json={"position": 0})
    assert r.json()["position"] == 0
    prefs = (await client.get(f"/api/conversations/{tid}/workspace")).json()["preferences"]
    assert [p["text"] for p in prefs] == ["no jargon", "short", "formal"]
    assert [p["position"] for p in prefs] == [0, 1, 2]
    assert [p["locked"] for p in prefs] == [False, False, True]
    uids = {p["uid"] for p in prefs}
    assert len(uids) == 3
    assert (await client.delete(f"{base}/{ids[0]}")).status_code == 204
    prefs = (await client.get(f"/api/conversations/{tid}/workspace")).json()["preferences"]
    assert [(p["text"], p["position"]) for p in prefs] == [("no jargon", 0), ("formal", 1)]
    assert (await client.patch(f"{base}/999999", json={"locked": True})).status_code == 404
    assert (await client.delete(f"{base}/999999")).status_code == 404
    r = await client.post(base, json={"text": ""})
    assert r.status_code == 422 and "text" in r.json()["message"]


async def test_todos_done_depth_reorder(client: httpx.AsyncClient, tid: str) -> None:
    base = f"/api/conversations/{tid}/todos"
    a = (await client.post(base, json={"text": "outline"})).json()
    b = (await client.post(base, json={"text": "intro", "depth": 1})).json()
    c = (await client.post(base, json={"text": "draft", "done": True})).json()
    assert (b["depth"], c["done"]) == (1, True)
    assert [t["position"] for t in (a, b, c)] == [0, 1, 2]  # each added at the end
    r = await client.patch(f"{base}/{a['id']}", json={"done": True, "depth": 2, "position": 2})
    assert (r.json()["done"], r.json()["depth"], r.json()["position"]) == (True, 2, 2)
    todos = (await client.get(f"/api/conversations/{tid}/workspace")).json()["todos"]
    assert [t["text"] for t in todos] == ["intro", "draft", "outline"]
    r = await client.patch(f"{base}/{b['id']}", json={"depth": -1})
    assert r.status_code == 422 and "depth" in r.json()["message"]
    assert (await client.delete(f"{base}/{c['id']}")).status_code == 204
    todos = (await client.get(f"/api/conversations/{tid}/workspace")).json()["todos"]
    assert [(t["text"], t["position"]) for t in todos] == [("intro", 0), ("outline", 1)]
    # After a removal, the next one still goes at the end, with the id it is listed by.
    d = (await client.post(base, json={"text": "conclusion"})).json()
    assert (d["text"], d["position"], d["done"], d["depth"]) == ("conclusion", 2, False, 0)
    todos = (await client.get(f"/api/conversations/{tid}/workspace")).json()["todos"]
    assert [(t["id"], t["position"]) for t in todos][-1] == (d["id"], 2)


async def test_items_of_another_thread_are_not_reachable(
    client: httpx.AsyncClient, tid: str
) -> None:
    other = (await client.post("/api/conversations", json={})).json()["thread_id"]
    pref = (await client.post(f"/api/conversations/{other}/preferences", json={"text": "x"})).json()
    r = await client.patch(f"/api/conversations/{tid}/preferences/{pref['id']}", json={"text": "y"})
    assert r.status_code == 404
    todo = (await client.post(f"/api/conversations/{other}/todos", json={"text": "x"})).json()
    assert (await client.delete(f"/api/conversations/{tid}/todos/{todo['id']}")).status_code == 404


async def test_as_of_turn_bounds(client: httpx.AsyncClient, tid: str) -> None:
    r = await client.get(f"/api/conversations/{tid}/workspace?as_of_turn=0")
    assert r.status_code == 200
    r = await client.get(f"/api/conversations/{tid}/workspace?as_of_turn=1")
    assert r.status_code == 404 and r.json()["code"] == "invalid_turn"
    r = await client.get(f"/api/conversations/{tid}/workspace?as_of_turn=-1")
    assert r.status_code == 422


async def test_unknown_artifact(client: httpx.AsyncClient, tid: str) -> None:
    r = await client.get(f"/api/conversations/{tid}/artifacts/12345")
    assert r.status_code == 404 and r.json()["code"] == "not_found"
