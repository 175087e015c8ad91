"""Finding a branch in a big tree: search covers branch names and summaries, takes
quoted phrases, matches whole words, and centres its snippets on the match (REST, both
databases); the query rules themselves as pure functions."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from haico.services.search.query import (
    SNIPPET_CHARS,
    excluded_of,
    first_match,
    matches,
    snippet,
    terms_of,
)
from tests.big_trees.test_summaries import until
from tests.history_helpers import new_thread, turn_ok


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    """No summaries unless a test asks: a branch is found by its name alone."""
    return {"summary_debounce_seconds": 3600}


async def _search(client: httpx.AsyncClient, q: str) -> list[dict[str, Any]]:
    r = await client.get("/api/search", params={"q": q})
    assert r.status_code == 200, r.text
    results: list[dict[str, Any]] = r.json()["results"]
    return results


async def test_a_branch_is_found_by_its_name_first(client: httpx.AsyncClient) -> None:
    root = await new_thread(client)
    await turn_ok(client, root, "objective: a study about needles")
    r = await client.post(f"/api/conversations/{root}/branch", json={"from_turn": 1})
    side = r.json()["thread_id"]
    await turn_ok(client, side, "todo: look closer")
    r = await client.patch(f"/api/conversations/{side}", json={"name": "needle-branch"})
    assert r.status_code == 200

    hits = await _search(client, "needle-branch")
    assert hits[0] == {
        "node_id": f"{side}:2",
        "thread_id": side,
        "root_thread_id": root,
        "kind": "branch",
        "snippet": "needle-branch",
    }
    # Whole words: "needle" is not "needles", so only the branch's name matches.
    assert [h["kind"] for h in await _search(client, "needle")] == ["branch"]


@pytest.mark.parametrize("settings_overrides", [{"summary_debounce_seconds": 0}])
async def test_a_branch_is_found_by_its_summary(
    client: httpx.AsyncClient, settings_overrides: dict[str, Any]
) -> None:
    root = await new_thread(client)
    await turn_ok(client, root, "objective: zebrafish husbandry")

    async def found() -> list[dict[str, Any]]:
        return [h for h in await _search(client, "husbandry") if h["kind"] == "branch"]

    hits = await until(found, "the branch found by its summary")
    assert hits[0]["thread_id"] == root and "husbandry" in hits[0]["snippet"]


async def test_words_and_phrases_not_substrings(client: httpx.AsyncClient) -> None:
    tid = await new_thread(client)
    await turn_ok(client, tid, "todo: Section 12 variants")
    await turn_ok(client, tid, "todo: try variant 2 of the plan")
    await turn_ok(client, tid, "todo: plan the intro draft")
    await turn_ok(client, tid, "todo: draft intro now")

    user = lambda hits: [h["node_id"] for h in hits if h["kind"] == "user"]  # noqa: E731
    assert user(await _search(client, "variant 2")) == [f"{tid}:2"]
    assert user(await _search(client, '"draft intro"')) == [f"{tid}:4"]
    assert set(user(await _search(client, "draft intro"))) == {f"{tid}:3", f"{tid}:4"}
    # The user's own words rank before the replies that repeat them.
    kinds = [h["kind"] for h in await _search(client, "variant 2")]
    assert kinds == sorted(kinds, key=["branch", "user", "assistant", "document"].index)


async def test_a_snippet_is_centred_on_the_match(client: httpx.AsyncClient) -> None:
    tid = await new_thread(client)
    text = "lorem ipsum " * 60 + "the okapi appears" + " dolor sit" * 60
    await turn_ok(client, tid, f"write: {text}")
    hits = [h for h in await _search(client, "okapi") if h["kind"] == "user"]
    snip = hits[0]["snippet"]
    assert snip.startswith("…") and snip.endswith("…")
    middle = snip.index("okapi") + len("okapi") // 2
    assert abs(middle - len(snip) / 2) < 20, snip


def test_terms_of_a_query() -> None:
    query = 'alpha "Beta  gamma" -delta or co-op'
    assert terms_of(query) == [["alpha"], ["beta", "gamma"], ["co", "op"]]
    assert excluded_of(query) == [["delta"]]
    assert terms_of('" "') == [] and terms_of("or") == []


def test_whole_word_matching() -> None:
    assert first_match("Section 12 variants", terms_of("variant 2")) is None
    assert first_match("variant 2, again", terms_of("variant 2")) == (0, 7)
    assert first_match("intro draft", terms_of('"draft intro"')) is None
    assert first_match("a draft, intro", terms_of('"draft intro"')) == (2, 14)
    assert matches("plan a", [["plan"]], []) and not matches("plan a", [["plan"]], [["a"]])


def test_snippet_window() -> None:
    short = "just this"
    assert snippet(short, terms_of("this")) == short
    long = "x " * 300 + "target" + " y" * 300
    snip = snippet(long, terms_of("target"))
    assert "target" in snip and len(snip) <= SNIPPET_CHARS + 2
    assert snippet(long, terms_of("absent")).startswith("x x")
