"""Security headers on every answer: JSON, an error, a stream's refusal, CSV, the path
as HTML, the studio's pages; the studio's policy allows exactly its own inline
scripts, and `/docs` no longer loads Swagger UI from a CDN."""

from __future__ import annotations

from pathlib import Path

import httpx

from haico.api.headers import (
    API_POLICY,
    inline_scripts,
    sha256_source,
    studio_policies,
    studio_policy,
)
from haico.api.methods import StudioFiles
from tests.history_helpers import new_thread, turn_ok

API = "/api/conversations"


def _assert_hardened(r: httpx.Response) -> str:
    assert r.headers["x-content-type-options"] == "nosniff", r.url
    assert r.headers["referrer-policy"] == "no-referrer", r.url
    policy = r.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in policy, r.url
    return policy


async def test_every_answer_carries_the_headers(client: httpx.AsyncClient) -> None:
    tid = await new_thread(client)
    await turn_ok(client, tid, "objective: one")
    answers = [
        await client.get("/api/health"),
        await client.get(f"{API}/{tid}/workspace"),
        await client.get(f"{API}/th_{'0' * 32}"),  # 404
        await client.put(f"{API}/{tid}/document", json={"content": 1}),  # 422
        await client.post(f"{API}/{tid}/todos", content=b"x" * (2 * 1024 * 1024)),  # 413
        await client.get(f"{API}/{tid}/export.csv"),
        await client.get("/openapi.json"),
    ]
    for r in answers:
        assert _assert_hardened(r) == API_POLICY
    assert [r.status_code for r in answers] == [200, 200, 404, 422, 413, 200, 200]

    page = await client.get(f"{API}/{tid}/path", params={"format": "html"})
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    policy = _assert_hardened(page)
    assert "default-src 'none'" in policy and "script-src" not in policy
    style = page.text.split("<style>", 1)[1].split("</style>", 1)[0]
    assert f"style-src {sha256_source(style)}" in policy  # the page's own stylesheet only

    # No third-party page on this origin.
    for url in ("/docs", "/redoc"):
        r = await client.get(url)
        assert r.status_code == 404 and "cdn.jsdelivr" not in r.text
        _assert_hardened(r)


PAGE = """<!doctype html><html><head><script src="/_next/a.js" async=""></script>
<script>self.__next_f=self.__next_f||[]</script></head><body><div style="x"></div>
<script id="_R_">self.__next_f.push([1,"a"])</script></body></html>"""


def test_the_studio_policy_allows_its_own_inline_scripts_only(tmp_path: Path) -> None:
    (tmp_path / "index.html").write_text(PAGE)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "index.html").write_text("<html><body>none</body></html>")
    policies = studio_policies(tmp_path)
    main = policies[str((tmp_path / "index.html").resolve())]
    assert inline_scripts(PAGE) == [
        "self.__next_f=self.__next_f||[]",
        'self.__next_f.push([1,"a"])',
    ]
    for script in inline_scripts(PAGE):
        assert sha256_source(script) in main
    assert "default-src 'self'" in main and "frame-ancestors 'none'" in main
    assert "unsafe-eval" not in main and "http" not in main
    assert "'unsafe-inline'" not in main.split("script-src", 1)[1].split(";", 1)[0]
    assert policies[str((tmp_path / "sub" / "index.html").resolve())] == studio_policy([])


async def test_the_studio_pages_carry_their_policy(tmp_path: Path) -> None:
    (tmp_path / "index.html").write_text(PAGE)
    (tmp_path / "404.html").write_text("<html>gone<script>x()</script></html>")
    studio = StudioFiles(tmp_path)
    transport = httpx.ASGITransport(app=studio)
    async with httpx.AsyncClient(transport=transport, base_url="http://h") as c:
        index = await c.get("/")
        missing = await c.get("/nowhere")
    assert index.status_code == 200
    assert sha256_source('self.__next_f.push([1,"a"])') in index.headers["content-security-policy"]
    assert missing.status_code == 404
    assert sha256_source("x()") in missing.headers["content-security-policy"]


async def test_a_revalidated_studio_page_keeps_its_policy(tmp_path: Path) -> None:
    """A reload revalidates the cached page: the 304 carries the page's policy, since a
    browser takes a 304's headers as the page's own (with the API's policy there, the
    reloaded studio could load none of its scripts and stayed at "Loading…")."""
    (tmp_path / "index.html").write_text(PAGE)
    studio = StudioFiles(tmp_path)
    transport = httpx.ASGITransport(app=studio)
    async with httpx.AsyncClient(transport=transport, base_url="http://h") as c:
        first = await c.get("/?thread=th_1")
        again = await c.get("/?thread=th_1", headers={"If-None-Match": first.headers["etag"]})
    assert again.status_code == 304
    assert again.headers["content-security-policy"] == first.headers["content-security-policy"]
    assert "script-src 'self'" in again.headers["content-security-policy"]
