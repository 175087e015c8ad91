"""Model profiles: CRUD per user with `default`, a provider the server lacks refused,
the offline model honouring seed and instructions, a branch's profile and a turn's
override, provenance naming the profile and the ignored parameters. SQLite and PG."""

from __future__ import annotations

import uuid

import httpx
from fastapi import FastAPI

from haico.services.access import users
from haico.services.families import conversations
from tests.helpers import db_of
from tests.history_helpers import new_thread, turn_ok
from tests.whatif_helpers import API, make_profile, node, turn_with


async def test_profiles_crud_default_and_refusals(app: FastAPI, client: httpx.AsyncClient) -> None:
    listed = (await client.get("/api/profiles")).json()
    assert [p["id"] for p in listed] == ["default"]
    assert listed[0]["provider"] == "offline" and listed[0]["instructions"] == ""

    p = await make_profile(
        client, name="terse", params={"seed": 3, "temperature": 0.2}, instructions="Be terse."
    )
    assert p["id"].startswith("pr_") and p["model"] == "haico-offline"
    assert p["params"] == {"temperature": 0.2, "max_tokens": None, "seed": 3}
    assert [q["name"] for q in (await client.get("/api/profiles")).json()] == ["default", "terse"]

    # a provider this server has no settings for: refused, with a clear error
    r = await client.post("/api/profiles", json={"name": "gpt", "provider": "openai"})
    assert r.status_code == 422 and r.json()["code"] == "provider_unavailable"
    assert "keys and base URLs are server settings" in r.json()["message"]
    # keys are never part of a profile; names are unique; `default` is the server's
    r = await client.post(
        "/api/profiles", json={"name": "k", "provider": "offline", "api_key": "sk-x"}
    )
    assert r.status_code == 422
    r = await client.post("/api/profiles", json={"name": "terse", "provider": "offline"})
    assert r.status_code == 409
    r = await client.post("/api/profiles", json={"name": "default", "provider": "offline"})
    assert r.status_code == 409
    assert (await client.delete("/api/profiles/default")).status_code == 403

    r = await client.patch(f"/api/profiles/{p['id']}", json={"instructions": "Be brief."})
    assert r.status_code == 200 and r.json()["instructions"] == "Be brief."
    assert r.json()["params"]["seed"] == 3

    # another user's profile: 403; unknown: 404
    stranger, _ = await users.create(db_of(app), name=f"s-{uuid.uuid4().hex[:8]}")
    from haico.db.models import ModelProfile

    async with db_of(app).transaction() as s:
        s.add(
            ModelProfile(
                id="pr_theirs",
                user_id=stranger.id,
                name="x",
                provider="offline",
                model="m",
                params={},
                instructions="",
            )
        )
    assert (await client.get("/api/profiles/pr_theirs")).status_code == 403
    assert (await client.patch("/api/profiles/pr_theirs", json={"name": "y"})).status_code == 403
    assert (await client.delete("/api/profiles/pr_theirs")).status_code == 403
    assert (await client.get("/api/profiles/pr_nothing")).status_code == 404
    tid = await new_thread(client)
    r = await client.post(f"{API}/{tid}/turns", json={"content": "hi", "profile_id": "pr_theirs"})
    assert r.status_code == 403
    r = await client.patch(f"{API}/{tid}", json={"profile_id": "pr_theirs"})
    assert r.status_code == 403
    foreign = await conversations.create(db_of(app), principal=stranger)
    r = await client.patch(f"{API}/{foreign.thread_id}", json={"profile_id": p["id"]})
    assert r.status_code == 403

    assert (await client.delete(f"/api/profiles/{p['id']}")).status_code == 204
    assert [q["id"] for q in (await client.get("/api/profiles")).json()] == ["default"]


async def test_offline_profiles_differ_deterministically_and_provenance_names_them(
    client: httpx.AsyncClient,
) -> None:
    a = await make_profile(
        client, name="a", params={"seed": 1, "temperature": 0.7}, instructions="Speak like a pilot."
    )
    b = await make_profile(client, name="b", params={"seed": 2})
    tid = await new_thread(client)
    await turn_ok(client, tid, "how are we doing?")
    await turn_with(client, tid, "how are we doing?", a["id"])
    await turn_with(client, tid, "how are we doing?", b["id"])
    await turn_with(client, tid, "how are we doing?", a["id"])
    replies = [(await node(client, tid, k))["reply"] for k in (1, 2, 3, 4)]
    assert replies[0].startswith("I changed nothing")  # the default is unchanged
    assert replies[1].startswith("A quick check-in. (seed 1) [Speak like a pilot.]")
    assert replies[2].startswith("Noted. (seed 2)")
    assert len({replies[0], replies[1], replies[2]}) == 3
    assert replies[3] == replies[1]  # same profile, same workspace: the same reply

    prov_default = (await node(client, tid, 1))["provenance"]
    prov_a = (await node(client, tid, 2))["provenance"]
    assert prov_default["profile_id"] == "default" and prov_default["params"] == {}
    assert prov_a["profile_id"] == a["id"] and prov_a["profile_name"] == "a"
    assert prov_a["provider"] == "offline" and prov_a["model"] == "haico-offline"
    # the offline model takes the seed; temperature is listed as ignored
    assert prov_a["params"] == {"seed": 1} and prov_a["ignored_params"] == ["temperature"]
    assert prov_a["instructions_sha256"] != prov_default["instructions_sha256"]
    assert len(prov_a["instructions_sha256"]) == 64


async def test_branch_profile_and_a_turns_override(client: httpx.AsyncClient) -> None:
    p = await make_profile(client, name="seeded", params={"seed": 4})
    tid = await new_thread(client)
    r = await client.patch(f"{API}/{tid}", json={"profile_id": p["id"]})
    assert r.status_code == 200 and r.json()["profile_id"] == p["id"]
    assert (await client.get(f"{API}/{tid}")).json()["profile_id"] == p["id"]
    await turn_ok(client, tid, "todo: pack")  # the branch's profile
    await turn_with(client, tid, "status?", "default")  # overridden for one turn
    await turn_ok(client, tid, "status?")  # the branch's again
    provs = [(await node(client, tid, k))["provenance"]["profile_id"] for k in (1, 2, 3)]
    assert provs == [p["id"], "default", p["id"]]
    first = await node(client, tid, 1)
    assert first["reply"].startswith("Right. (seed 4) Done.")
    # tool calls are the same whatever the profile: the workspace is built alike
    todos = (await client.get(f"{API}/{tid}/workspace")).json()["todos"]
    assert [t["text"] for t in todos] == ["pack"]
    # deleting the profile puts its branches back on the default
    assert (await client.delete(f"/api/profiles/{p['id']}")).status_code == 204
    assert (await client.get(f"{API}/{tid}")).json()["profile_id"] == "default"
    await turn_ok(client, tid, "status?")
    assert (await node(client, tid, 4))["provenance"]["profile_id"] == "default"
    # unknown profile on a turn: 404, and nothing was opened
    r = await client.post(f"{API}/{tid}/turns", json={"content": "x", "profile_id": "pr_none"})
    assert r.status_code == 404
    assert (await client.get(f"{API}/{tid}")).json()["turn_index"] == 4
