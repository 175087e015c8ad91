"""`haico ahp URL`: a small AHP client for debugging clients of your own.

It connects to `/ahp`, initializes, lists the sessions, subscribes to one chat (the
one given, or the first session's default chat) and prints every message the host
pushes as one JSON line on stdout: each `action` envelope as it arrives (`channel`,
`action`, `serverSeq`) and the root notifications as `{"notification": …,
"params": …}`. What it did is said on stderr, so stdout can be piped to `jq`. It runs
until Ctrl-C (or until the host closes the connection).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import uuid
from typing import Any, TextIO
from urllib.parse import urlsplit, urlunsplit

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, WebSocketException

Json = dict[str, Any]


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "ahp", help="connect to an AHP host, subscribe to a chat and print its actions"
    )
    p.add_argument("url", help="the server (http://host:port) or its ws://…/ahp endpoint")
    p.add_argument("--token", help="bearer token (token mode)")
    p.add_argument("--chat", help="ahp-chat:/<uuid> to follow (default: the first session's)")
    p.add_argument("--version", default="1.0.0", help="protocol version to offer (1.0.0)")


def ws_url(url: str) -> str:
    """`http://h:p` → `ws://h:p/ahp`; a ws(s) URL with a path is kept."""
    parts = urlsplit(url)
    scheme = {"http": "ws", "https": "wss"}.get(parts.scheme, parts.scheme)
    path = parts.path if parts.path not in ("", "/") else "/ahp"
    return urlunsplit((scheme, parts.netloc, path, parts.query, ""))


class _Session:
    def __init__(self, ws: ClientConnection, out: TextIO, err: TextIO) -> None:
        self.ws, self.out, self.err = ws, out, err
        self.next_id = 0

    def emit(self, msg: Json) -> None:
        if msg.get("method") == "action":
            line: Json = msg["params"]
        else:
            line = {"notification": msg.get("method"), "params": msg.get("params")}
        print(json.dumps(line), file=self.out, flush=True)

    async def call(self, method: str, params: Json) -> Any:
        """A request; what the host pushes meanwhile is printed."""
        self.next_id += 1
        await self.ws.send(
            json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        )
        while True:
            msg = json.loads(await self.ws.recv())
            if msg.get("id") == self.next_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result")
            if "method" in msg:
                self.emit(msg)

    async def follow(self) -> None:
        async for raw in self.ws:
            msg = json.loads(raw)
            if "method" in msg:
                self.emit(msg)


async def run(
    url: str,
    *,
    token: str | None = None,
    chat: str | None = None,
    version: str = "1.0.0",
    out: TextIO = sys.stdout,
    err: TextIO = sys.stderr,
) -> int:
    headers = {"Authorization": f"Bearer {token}"} if token else None
    async with connect(ws_url(url), additional_headers=headers, max_size=None) as ws:
        s = _Session(ws, out, err)
        init = await s.call(
            "initialize",
            {"protocolVersions": [version], "clientId": f"haico-cli-{uuid.uuid4().hex[:8]}"},
        )
        print(
            f"# initialized: protocol {init['protocolVersion']}, serverSeq {init['serverSeq']}",
            file=err,
            flush=True,
        )
        sessions = (await s.call("listSessions", {}))["items"]
        print(f"# {len(sessions)} session(s)", file=err, flush=True)
        for item in sessions:
            print(f"#   {item['resource']}  {item.get('title', '')}", file=err, flush=True)
        if chat is None:
            if not sessions:
                print("no sessions; pass --chat ahp-chat:/<uuid>", file=err)
                return 1
            chat = str(sessions[0]["resource"]).replace("ahp-session:", "ahp-chat:", 1)
        snap = (await s.call("subscribe", {"channel": chat}))["snapshot"]
        turns = len(snap["state"].get("turns") or {})
        print(
            f"# subscribed to {chat} at serverSeq {snap['fromSeq']} ({turns} turns shown)",
            file=err,
            flush=True,
        )
        with contextlib.suppress(ConnectionClosed):
            await s.follow()
        print(f"# closed by the host ({ws.close_code})", file=err, flush=True)
    return 0


def main(args: argparse.Namespace) -> int:
    try:
        return asyncio.run(run(args.url, token=args.token, chat=args.chat, version=args.version))
    except KeyboardInterrupt:
        return 0
    except (OSError, RuntimeError, WebSocketException) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
