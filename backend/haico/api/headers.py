"""Security headers on every HTTP answer, and the content policies of the pages the
server serves.

Every answer says `X-Content-Type-Options: nosniff` and `Referrer-Policy: no-referrer`
(a share link's token in an address is never sent on as a referrer), and carries a
`Content-Security-Policy` with `frame-ancestors 'none'` (no page of HAICO can be
framed: the studio holds a token). An answer that sets no policy of its own gets
`API_POLICY`, which lets nothing load or run: JSON, CSV and event streams need none.

The studio's pages (the Next.js static export) get `studio_policy`: everything from
this origin only, and its inline scripts (the export writes the page's data as inline
`<script>` elements) by their SHA-256, computed at start-up from the files served.
Styles allow `'unsafe-inline'`: the export writes `style="…"` attributes, which a
hash cannot allow without `'unsafe-hashes'` for each; no script can run from a style.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Iterable
from pathlib import Path

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

CSP = "content-security-policy"
API_POLICY = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
ALWAYS = {
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",  # for browsers that predate `frame-ancestors`
}
# An inline script of an HTML page: its attributes (no `src`) and its text.
_SCRIPT = re.compile(r"<script(?P<attrs>[^>]*)>(?P<body>.*?)</script>", re.DOTALL | re.IGNORECASE)


def sha256_source(text: str) -> str:
    """A CSP hash source for an inline element's exact text."""
    digest = hashlib.sha256(text.encode()).digest()
    return "'sha256-" + base64.b64encode(digest).decode() + "'"


def inline_scripts(page: str) -> list[str]:
    """The text of every inline script of an HTML page (those without `src`)."""
    return [m["body"] for m in _SCRIPT.finditer(page) if "src=" not in m["attrs"].lower()]


def studio_policy(scripts: Iterable[str]) -> str:
    """The policy of one studio page, allowing its own inline scripts."""
    hashes = sorted({sha256_source(s) for s in scripts})
    return "; ".join(
        [
            "default-src 'self'",
            " ".join(["script-src 'self'", *hashes]),
            "style-src 'self' 'unsafe-inline'",
            "img-src 'self' data: blob:",
            "font-src 'self' data:",
            "connect-src 'self'",
            "object-src 'none'",
            "base-uri 'self'",
            "form-action 'self'",
            "frame-ancestors 'none'",
        ]
    )


def studio_policies(directory: Path) -> dict[str, str]:
    """Each HTML file of the static export (by resolved path) -> its policy."""
    return {
        str(page.resolve()): studio_policy(inline_scripts(page.read_text(errors="replace")))
        for page in directory.rglob("*.html")
    }


def inline_style_policy(css: str) -> str:
    """A standalone page with one inline stylesheet and nothing else to load or run."""
    return (
        f"default-src 'none'; style-src {sha256_source(css)}; "
        "frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
    )


class SecurityHeadersMiddleware:
    """Adds the headers above to every HTTP answer (the policy only when the answer
    set none of its own)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in ALWAYS.items():
                    headers[name] = value
                if CSP not in headers:
                    headers[CSP] = API_POLICY
            await send(message)

        await self.app(scope, receive, send_with_headers)
