"""One AHP connection: JSON-RPC framing, the version agreed, subscriptions, and the
delivery of logged actions in `serverSeq` order.

Every operation calls the same service function as its REST twin. Outgoing messages
go through a bounded queue drained by one sender task: a client that stops reading
fills its queue and is closed (`SLOW_CONSUMER`) without slowing anyone else; it can
`reconnect`. Logged actions come from the process's event bus; a subscription
remembers the `serverSeq` its snapshot stands at, and only later actions of its
channel are delivered.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import uuid
from collections import OrderedDict
from types import SimpleNamespace
from typing import Any

from starlette.websockets import WebSocket, WebSocketDisconnect

from app.ahp import cursors
from app.ahp.adapter import SUPPORTED, Adapter, BadVersion, canonical, negotiate, turn_from
from app.config import Settings
from app.db.engine import Database
from app.db.models import ActionLogEntry
from app.domain import NodeId
from app.errors import ERROR_TABLE, CheckoutWouldDiscardChanges, DomainError, InvalidInput
from app.events.bus import EventBus
from app.services import branching, conversations, history, turn_views
from app.services.turns import TurnManager
from app.services.users import Principal

log = logging.getLogger("haico.ahp")

ROOT = "ahp-root://"
SLOW_CONSUMER = 4008  # close code: the client did not read its messages in time
TOO_BIG = 1009
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL = (
    -32700,
    -32600,
    -32601,
    -32602,
    -32603,
)
RATE_LIMITED = -32000
UNSUPPORTED_VERSION = -32005
NOT_FOUND = -32008

Json = dict[str, Any]

# Canonical actions shared by every connection of the process, by serverSeq (a logged
# `chat/turnsLoaded` expanded to full turns once, not once per subscriber).
_canonical_cache: OrderedDict[int, Json] = OrderedDict()
_CACHE_SIZE = 4096


class RpcError(Exception):
    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


def rpc_error(exc: DomainError) -> RpcError:
    code = ERROR_TABLE.get(exc.code, (500, INTERNAL))[1]
    if isinstance(exc, CheckoutWouldDiscardChanges):
        return RpcError(code, "Checkout would discard changes", {"message": exc.message})
    return RpcError(code, exc.message, exc.data or None)


def family_of(channel: Any, scheme: str) -> str:
    """`ahp-chat:/<uuid>` → its root thread id `th_<hex>` (-32602 when malformed)."""
    prefix = f"{scheme}:/"
    if not isinstance(channel, str) or not channel.startswith(prefix):
        raise RpcError(INVALID_PARAMS, f"channel: expected a {scheme}:/<uuid> URI")
    try:
        return "th_" + uuid.UUID(channel[len(prefix) :]).hex
    except ValueError as exc:
        raise RpcError(INVALID_PARAMS, f"channel: {channel!r} has no valid uuid") from exc


def chat_uri(root_thread_id: str) -> str:
    return f"ahp-chat:/{uuid.UUID(hex=root_thread_id.removeprefix('th_'))}"


def session_uri(root_thread_id: str) -> str:
    return f"ahp-session:/{uuid.UUID(hex=root_thread_id.removeprefix('th_'))}"


def iso(stamp: Any) -> str:
    return str(stamp.isoformat())


def _params(msg: Json) -> Json:
    params = msg.get("params", {})
    if params is None:
        return {}
    if not isinstance(params, dict):
        raise RpcError(INVALID_PARAMS, "params: expected an object")
    return params


def _opt_str(params: Json, key: str) -> str | None:
    value = params.get(key)
    if value is not None and not isinstance(value, str):
        raise RpcError(INVALID_PARAMS, f"{key}: expected a string")
    return value


class Connection:
    def __init__(self, ws: WebSocket, state: Any, principal: Principal) -> None:
        self.ws = ws
        self.settings: Settings = state.settings
        self.db: Database = state.db
        self.bus: EventBus = state.bus
        self.turns: TurnManager = state.turns
        self.runtime = state.runtime
        self.user = principal
        self.key = self.settings.signing_key()
        self.adapter: Adapter | None = None
        self.client_id = ""
        self.subs: dict[str, int] = {}  # channel -> serverSeq its state stands at
        self.my_roots: set[str] = set()
        self.seen_seq = 0  # the last entry the pump handled
        self.origins: dict[int, Json] = {}
        self.lock = asyncio.Lock()
        self.out: asyncio.Queue[str | None] = asyncio.Queue(self.settings.ahp_queue_size)
        self.closed = asyncio.Event()
        self.progress = asyncio.Event()  # set whenever the pump handled an entry
        self.close_code = 1000
        self.pump: asyncio.Task[None] | None = None
        self.tasks: set[asyncio.Task[Any]] = set()
        rate = self.settings.ahp_requests_per_second
        self.bucket, self.bucket_max, self.bucket_at = 2 * rate, 2 * rate, time.monotonic()

    # ---- sending ----

    def send(self, message: Json | str) -> None:
        if self.closed.is_set():
            return
        text = message if isinstance(message, str) else json.dumps(message)
        try:
            self.out.put_nowait(text)
        except asyncio.QueueFull:
            log.warning("AHP client %s is not reading; closing it", self.client_id or "?")
            self.shutdown(SLOW_CONSUMER)

    def shutdown(self, code: int) -> None:
        if not self.closed.is_set():
            self.close_code = code
            self.closed.set()

    def reply(self, msg_id: Any, result: Any) -> None:
        self.send({"jsonrpc": "2.0", "id": msg_id, "result": result})

    def error(self, msg_id: Any, err: RpcError) -> None:
        body: Json = {"code": err.code, "message": err.message}
        if err.data is not None:
            body["data"] = err.data
        self.send({"jsonrpc": "2.0", "id": msg_id, "error": body})

    async def _sender(self) -> None:
        while True:
            text = await self.out.get()
            if text is None:
                return
            await self.ws.send_text(text)

    # ---- the connection's life ----

    async def run(self) -> None:
        sender = asyncio.create_task(self._sender())
        reader = asyncio.create_task(self._reader())
        closed = asyncio.create_task(self.closed.wait())
        try:
            await asyncio.wait({sender, reader, closed}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if self.closed.is_set() and self.close_code == 1000 and not reader.done():
                # A normal close asked by the host (after -32005): flush first.
                self.out.put_nowait(None)
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(asyncio.shield(sender), timeout=2)
            for task in (reader, closed, sender, self.pump, *self.tasks):
                if task is not None:
                    task.cancel()
            for task in (reader, sender, self.pump):
                if task is not None:
                    with contextlib.suppress(BaseException):
                        await task
            if self.closed.is_set():
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(self.ws.close(code=self.close_code), timeout=1)

    def _allow(self) -> bool:
        now = time.monotonic()
        rate = self.settings.ahp_requests_per_second
        self.bucket = min(self.bucket_max, self.bucket + (now - self.bucket_at) * rate)
        self.bucket_at = now
        if self.bucket < 1:
            return False
        self.bucket -= 1
        return True

    async def _reader(self) -> None:
        limit = self.settings.ahp_max_frame_bytes
        while True:
            try:
                frame = await self.ws.receive()
            except WebSocketDisconnect:
                return
            if frame["type"] == "websocket.disconnect":
                return
            text = frame.get("text")
            if text is None and frame.get("bytes") is not None:
                text = frame["bytes"].decode("utf-8", "replace")
            if text is None:
                continue
            if len(text) > limit:
                self.shutdown(TOO_BIG)
                return
            await self._handle(text)

    async def _handle(self, text: str) -> None:
        try:
            msg = json.loads(text)
        except ValueError:
            self.error(None, RpcError(PARSE_ERROR, "Parse error: not JSON"))
            return
        if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
            self.error(None, RpcError(INVALID_REQUEST, "Invalid Request: not JSON-RPC 2.0"))
            return
        msg_id = msg.get("id")
        method = msg.get("method")
        is_request = "id" in msg
        if not isinstance(method, str):
            if "result" in msg or "error" in msg:
                return  # a response to nothing we asked: ignore
            self.error(msg_id, RpcError(INVALID_REQUEST, "Invalid Request: no method"))
            return
        if not self._allow():
            if is_request:
                self.error(msg_id, RpcError(RATE_LIMITED, "Too many requests; slow down"))
            return
        try:
            result = await self._dispatch(method, msg, is_request)
        except RpcError as err:
            if is_request:
                self.error(msg_id, err)
            if err.code == UNSUPPORTED_VERSION:
                self.shutdown(1000)  # after the error is sent
            return
        except DomainError as exc:
            if is_request:
                self.error(msg_id, rpc_error(exc))
            return
        except Exception:
            log.exception("AHP %s failed", method)
            if is_request:
                self.error(msg_id, RpcError(INTERNAL, "Internal error"))
            return
        if is_request:
            self.reply(msg_id, result)

    async def _dispatch(self, method: str, msg: Json, is_request: bool) -> Any:
        params = _params(msg)
        if method == "initialize":
            return await self.initialize(params, msg.get("id"))
        if method == "reconnect":
            return await self.reconnect(params)
        if method == "ping":
            return {}
        if self.adapter is None:
            raise RpcError(INVALID_REQUEST, "initialize first")
        handler = {
            "subscribe": self.subscribe,
            "unsubscribe": self.unsubscribe,
            "listSessions": self.list_sessions,
            "createSession": self.create_session,
            "disposeSession": self.dispose_session,
            "createChat": self.create_chat,
            "fetchTurns": self.fetch_turns,
            "checkoutChatHistory": self.checkout,
            "dispatchAction": self.dispatch_action,
        }.get(method)
        if handler is None:
            raise RpcError(METHOD_NOT_FOUND, f"Method not found: {method}")
        return await handler(params)

    # ---- lifecycle ----

    def _start(self, version: str, client_id: Any) -> None:
        if not isinstance(client_id, str) or not client_id:
            raise RpcError(INVALID_PARAMS, "clientId: expected a non-empty string")
        self.adapter = Adapter(version)
        self.client_id = client_id

    async def initialize(self, params: Json, msg_id: Any) -> Json:
        if self.adapter is not None:
            raise RpcError(INVALID_REQUEST, "already initialized")
        offered = params.get("protocolVersions")
        if not isinstance(offered, list) or not all(isinstance(v, str) for v in offered):
            raise RpcError(INVALID_PARAMS, "protocolVersions: expected a list of strings")
        try:
            version = negotiate(offered)
        except BadVersion as exc:
            raise RpcError(INVALID_PARAMS, str(exc)) from exc
        if version is None:
            raise RpcError(
                UNSUPPORTED_VERSION,
                f"Unsupported protocol version; this host speaks {', '.join(SUPPORTED)}",
                {"supportedVersions": list(SUPPORTED)},
            )
        self._start(version, params.get("clientId"))
        wanted = params.get("initialSubscriptions") or []
        if not isinstance(wanted, list):
            raise RpcError(INVALID_PARAMS, "initialSubscriptions: expected a list")
        position = await turn_views.log_position(self.db)
        self.seen_seq = position
        snapshots = [await self._snapshot(ROOT)]
        for channel in wanted:
            if channel == ROOT:
                continue
            with contextlib.suppress(RpcError, DomainError):
                snapshots.append(await self._snapshot(channel))
        self._start_pump(position)
        return {
            "protocolVersion": version,
            "serverSeq": position,
            "serverInfo": {"name": "haico", "version": "0.1.0"},
            "snapshots": snapshots,
        }

    async def reconnect(self, params: Json) -> Json:
        if self.adapter is None:
            offered = params.get("protocolVersions") or ["1.0.0"]
            try:
                version = negotiate(offered) if isinstance(offered, list) else None
            except BadVersion as exc:
                raise RpcError(INVALID_PARAMS, str(exc)) from exc
            if version is None:
                raise RpcError(
                    UNSUPPORTED_VERSION,
                    "Unsupported protocol version",
                    {"supportedVersions": list(SUPPORTED)},
                )
            self._start(version, params.get("clientId"))
        last = params.get("lastSeenServerSeq")
        channels = params.get("subscriptions")
        if not isinstance(last, int | float) or not isinstance(channels, list):
            raise RpcError(INVALID_PARAMS, "lastSeenServerSeq and subscriptions are required")
        missing: list[str] = []
        roots: dict[str, str] = {}
        for channel in channels:
            if channel == ROOT:
                continue
            try:
                root = self._channel_root(channel)
                await turn_views.session(self.db, user_id=self.user.id, root_thread_id=root)
                roots[channel] = root
            except (RpcError, DomainError):
                missing.append(channel)
        async with self.lock:
            entries = await turn_views.replay(
                self.db, after=int(last), root_thread_ids=set(roots.values())
            )
            if entries is None:
                snapshots = [await self._snapshot_locked(c) for c in channels if c not in missing]
                if self.pump is None:
                    self._start_pump(min((s["fromSeq"] for s in snapshots), default=0))
                return {"type": "snapshot", "snapshots": snapshots}
            position = await turn_views.log_position(self.db)
            actions = []
            for seq, channel, action in entries:
                if channel in roots:
                    envelope = await self._envelope(seq, channel, action, roots[channel])
                    actions.append(envelope)
            for channel in channels:
                if channel not in missing:
                    self.subs[channel] = position
                    if channel != ROOT:
                        self.my_roots.add(roots[channel])
            if self.pump is None:
                self.seen_seq = position
                self._start_pump(position)
            return {"type": "replay", "actions": actions, "missing": missing}

    def _start_pump(self, after: int) -> None:
        if self.pump is None:
            self.pump = asyncio.create_task(self._pump(after))

    # ---- subscriptions and snapshots ----

    def _channel_root(self, channel: Any) -> str:
        if isinstance(channel, str) and channel.startswith("ahp-chat:"):
            return family_of(channel, "ahp-chat")
        if isinstance(channel, str) and channel.startswith("ahp-session:"):
            return family_of(channel, "ahp-session")
        raise RpcError(INVALID_PARAMS, f"channel: unknown channel {channel!r}")

    async def _snapshot(self, channel: Any) -> Json:
        async with self.lock:
            return await self._snapshot_locked(channel)

    async def _snapshot_locked(self, channel: Any) -> Json:
        if channel not in self.subs and len(self.subs) >= self.settings.ahp_max_subscriptions:
            raise RpcError(
                INVALID_PARAMS,
                f"too many subscriptions (at most {self.settings.ahp_max_subscriptions})",
            )
        if channel == ROOT:
            snapshot = await self._root_snapshot()
        elif isinstance(channel, str) and channel.startswith("ahp-session:"):
            snapshot = await self._session_snapshot(family_of(channel, "ahp-session"))
        elif isinstance(channel, str) and channel.startswith("ahp-chat:"):
            snapshot = await self._chat_snapshot(family_of(channel, "ahp-chat"))
        else:
            raise RpcError(INVALID_PARAMS, f"channel: unknown channel {channel!r}")
        at = int(snapshot["fromSeq"])
        self.subs[channel] = at
        if channel != ROOT and at < self.seen_seq:
            # The pump is past the snapshot: deliver the gap of this channel now.
            root = self._channel_root(channel)
            for seq, ch, action in (
                await turn_views.replay(self.db, after=at, root_thread_ids={root}) or []
            ):
                if ch == channel and seq <= self.seen_seq:
                    self.send(self._action_message(await self._envelope(seq, ch, action, root)))
            self.subs[channel] = self.seen_seq
        return snapshot

    async def _root_snapshot(self) -> Json:
        records = await turn_views.sessions(self.db, user_id=self.user.id)
        self.my_roots.update(r.root_thread_id for r in records)
        position = await turn_views.log_position(self.db)
        agent = {
            "provider": "haico",
            "displayName": "HAICO",
            "description": "A human-AI collaborative workspace whose chats are history graphs",
            "models": [],
            "capabilities": {
                "multipleChats": {"fork": True},
                "history": {"retainsBranches": self.settings.history_retains_branches},
            },
        }
        state = {"agents": [agent], "activeSessions": len(records)}
        return {"resource": ROOT, "state": state, "fromSeq": position}

    def _chat_summary(self, chat: turn_views.ChatRecord) -> Json:
        summary: Json = {
            "resource": chat_uri(chat.root_thread_id),
            "title": chat.title,
            "status": 8 if chat.running else 1,
            "modifiedAt": iso(chat.updated_at),
        }
        if chat.forked_from and chat.forked_from_root:
            summary["origin"] = {
                "kind": "fork",
                "chat": chat_uri(chat.forked_from_root),
                "turnId": chat.forked_from,
            }
        return summary

    def _session_summary(self, record: turn_views.SessionRecord) -> Json:
        assert self.adapter is not None
        summary = {
            "resource": session_uri(record.root_thread_id),
            "provider": "haico",
            "title": record.title,
            "status": 8 if any(c.running for c in record.chats) else 1,
            "createdAt": iso(record.created_at),
            "modifiedAt": iso(record.updated_at),
        }
        chats = [
            {k: v for k, v in self._chat_summary(c).items() if k != "modifiedAt"}
            for c in record.chats
        ]
        return self.adapter.session_summary(summary, chats, chat_uri(record.root_thread_id))

    async def _session_snapshot(self, root: str) -> Json:
        position = await turn_views.log_position(self.db)
        record = await turn_views.session(self.db, user_id=self.user.id, root_thread_id=root)
        self.my_roots.add(root)
        state = {
            "provider": "haico",
            "title": record.title,
            "status": 8 if any(c.running for c in record.chats) else 1,
            "lifecycle": "ready",
            "activeClients": [],
            "chats": [self._chat_summary(c) for c in record.chats],
            "defaultChat": chat_uri(root),
        }
        return {"resource": session_uri(root), "state": state, "fromSeq": position}

    def _path_cursor(self, root: str, before: str) -> str:
        return cursors.sign(self.key, {"k": "path", "c": root, "b": before})

    def _turns(self, page: turn_views.TurnsPage) -> dict[str, Json]:
        assert self.adapter is not None
        return {
            r.id: self.adapter.turn(turn_from(r, page.actions.get(r.id, []))) for r in page.turns
        }

    async def _chat_snapshot(self, root: str) -> Json:
        assert self.adapter is not None
        m = await turn_views.chat_material(
            self.db,
            user_id=self.user.id,
            root_thread_id=root,
            limit=self.settings.ahp_snapshot_turns,
        )
        turns = self._turns(m.path)
        head_state = turns.get(m.head_turn_id or "", {}).get("state")
        state: Json = {
            "resource": chat_uri(root),
            "title": m.title,
            "status": 8 if m.active else (2 if head_state == "error" else 1),
            "modifiedAt": iso(m.updated_at),
            "turns": turns,
        }
        if m.head_turn_id:
            state["headTurnId"] = m.head_turn_id
        if m.path.more and m.path.turns:
            state["turnsNextCursor"] = self._path_cursor(root, m.path.turns[0].id)
        if m.active is not None:
            record = SimpleNamespace(
                id=m.active.id,
                parent_id=m.active.parent_id,
                user_message=m.active.user_message,
                started_at=m.active.started_at,
                reply="",
                state="running",
                completed_at=None,
            )
            state["activeTurn"] = turn_from(record, m.active_actions)
        if m.forked_from and m.forked_from_root:
            state["origin"] = {
                "kind": "fork",
                "chat": chat_uri(m.forked_from_root),
                "turnId": m.forked_from,
            }
        self.my_roots.add(root)
        return {
            "resource": chat_uri(root),
            "state": self.adapter.chat_state(state),
            "fromSeq": m.server_seq,
        }

    async def subscribe(self, params: Json) -> Json:
        return {"snapshot": await self._snapshot(params.get("channel"))}

    async def unsubscribe(self, params: Json) -> None:
        self.subs.pop(str(params.get("channel")), None)

    # ---- delivery ----

    async def _pump(self, after: int) -> None:
        stream = self.bus.stream(root_thread_ids=None, after=after)
        try:
            async for entry in stream:
                async with self.lock:
                    await self._deliver(entry)
        finally:
            await stream.aclose()

    async def _canonical(self, seq: int, action: Json, root: str | None) -> Json:
        cached = _canonical_cache.get(seq)
        if cached is not None:
            return cached
        if action.get("type") == "chat/turnsLoaded" and root is not None:
            ids = [str(t.get("id")) for t in action.get("turns") or []]
            page = await turn_views.turns_by_id(self.db, root_thread_id=root, turn_ids=ids)
            out: Json = {
                "type": "chat/turnsLoaded",
                "turns": {r.id: turn_from(r, page.actions.get(r.id, [])) for r in page.turns},
            }
        else:
            out = canonical(action)
        _canonical_cache[seq] = out
        while len(_canonical_cache) > _CACHE_SIZE:
            _canonical_cache.popitem(last=False)
        return out

    async def _envelope(self, seq: int, channel: str, action: Json, root: str | None) -> Json:
        assert self.adapter is not None
        envelope: Json = {
            "channel": channel,
            "action": self.adapter.action(await self._canonical(seq, action, root)),
            "serverSeq": seq,
        }
        origin = self.origins.pop(seq, None)
        if origin is not None:
            envelope["origin"] = origin
        return envelope

    @staticmethod
    def _action_message(envelope: Json) -> Json:
        return {"jsonrpc": "2.0", "method": "action", "params": envelope}

    async def _deliver(self, entry: ActionLogEntry) -> None:
        try:
            await self._deliver_one(entry)
        finally:
            self.seen_seq = entry.seq
            self.progress.set()

    async def _deliver_one(self, entry: ActionLogEntry) -> None:
        channel = entry.channel
        action = entry.action
        if (
            ROOT in self.subs
            and action.get("type") == "haico/threadChanged"
            and action.get("threadId") == entry.root_thread_id
        ):
            await self._root_notification(str(entry.root_thread_id), str(action.get("change")))
        at = self.subs.get(channel)
        if at is None or entry.seq <= at:
            return
        envelope = await self._envelope(entry.seq, channel, action, entry.root_thread_id)
        self.send(self._action_message(envelope))

    async def _root_notification(self, root: str, change: str) -> None:
        if change == "created":
            owner = await turn_views.owner_of_family(self.db, root)
            if owner != self.user.id:
                return
            self.my_roots.add(root)
            record = turn_views.SessionRecord(root, "", *([_now()] * 2))
            with contextlib.suppress(DomainError):
                record = await turn_views.session(
                    self.db, user_id=self.user.id, root_thread_id=root
                )
            self.send(
                {
                    "jsonrpc": "2.0",
                    "method": "root/sessionAdded",
                    "params": {"channel": ROOT, "summary": self._session_summary(record)},
                }
            )
        elif change == "deleted" and root in self.my_roots:
            self.my_roots.discard(root)
            self.send(
                {
                    "jsonrpc": "2.0",
                    "method": "root/sessionRemoved",
                    "params": {"channel": ROOT, "session": session_uri(root)},
                }
            )

    async def _caught_up(self) -> None:
        """Wait (briefly) until the pump has delivered everything committed so far, so a
        response follows the actions of the change it answers."""
        target = await turn_views.log_position(self.db)
        self.bus.wake()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(5):
                while self.seen_seq < target:
                    self.progress.clear()
                    await self.progress.wait()

    # ---- sessions and chats ----

    async def list_sessions(self, params: Json) -> Json:
        records = await turn_views.sessions(self.db, user_id=self.user.id)
        self.my_roots.update(r.root_thread_id for r in records)
        return {"items": [self._session_summary(r) for r in records]}

    async def create_session(self, params: Json) -> Json:
        root = family_of(params.get("channel"), "ahp-session")
        self.my_roots.add(root)
        await conversations.create(self.db, user_id=self.user.id, thread_id=root)
        await self._caught_up()
        return {}

    async def dispose_session(self, params: Json) -> Json:
        root = family_of(params.get("channel"), "ahp-session")
        await history.soft_delete(self.db, user_id=self.user.id, thread_id=root)
        await self._caught_up()
        return {}

    async def create_chat(self, params: Json) -> Json:
        family_of(params.get("channel"), "ahp-session")
        new_root = family_of(params.get("chat"), "ahp-chat")
        source = params.get("source")
        if not isinstance(source, dict) or source.get("kind") != "fork":
            raise RpcError(INVALID_PARAMS, "source: HAICO creates chats only as forks")
        family_of(source.get("chat"), "ahp-chat")
        node = NodeId.parse(str(source.get("turnId")))
        if node is None:
            raise RpcError(INVALID_PARAMS, "source.turnId: not a turn of this host")
        await branching.create_fork(
            self.db,
            self.runtime,
            user_id=self.user.id,
            thread_id=node.thread_id,
            from_turn=node.turn,
            fork_thread_id=new_root,
        )
        await self._caught_up()
        return {}

    # ---- history ----

    async def checkout(self, params: Json) -> Json:
        root = family_of(params.get("channel"), "ahp-chat")
        turn_id = _opt_str(params, "turnId")
        expected: Any = history.UNSET
        if "expectedHeadTurnId" in params:
            expected = _opt_str(params, "expectedHeadTurnId")
        force = params.get("force", False)
        if not isinstance(force, bool):
            raise RpcError(INVALID_PARAMS, "force: expected a boolean")
        await history.checkout(
            self.db,
            user_id=self.user.id,
            thread_id=root,
            turn_id=turn_id,
            expected_head_turn_id=expected,
            force=force,
            retains=self.settings.history_retains_branches,
        )
        await self._caught_up()
        return {}

    async def fetch_turns(self, params: Json) -> Json:
        assert self.adapter is not None
        channel = params.get("channel")
        root = family_of(channel, "ahp-chat")
        cursor = _opt_str(params, "cursor")
        if cursor is not None and "parentTurnId" in params:
            raise RpcError(INVALID_PARAMS, "cursor and parentTurnId cannot be combined")
        size = self.settings.ahp_page_size
        if cursor is not None:
            try:
                payload = cursors.open_cursor(self.key, cursor)
            except (cursors.BadCursor, ValueError) as exc:
                raise RpcError(INVALID_PARAMS, "cursor: not a cursor this host issued") from exc
            if payload.get("c") != root:
                raise RpcError(INVALID_PARAMS, "cursor: issued for another chat")
        elif "parentTurnId" in params:
            payload = {"k": "kids", "c": root, "p": _opt_str(params, "parentTurnId"), "a": 0}
        else:
            payload = {"k": "path", "c": root, "b": None}
        result: Json = {}
        action: Json = {"type": "chat/turnsLoaded"}
        if payload.get("k") == "kids":
            page, after = await turn_views.children(
                self.db,
                user_id=self.user.id,
                root_thread_id=root,
                parent_turn_id=payload.get("p"),
                after_order=int(payload.get("a") or 0),
                limit=size,
            )
            action["turns"] = self._turns(page)
            if after is not None:
                result["nextCursor"] = cursors.sign(self.key, {**payload, "a": after})
        else:
            before = payload.get("b")
            if before is None:
                material = await turn_views.chat_material(
                    self.db, user_id=self.user.id, root_thread_id=root, limit=size
                )
                page = material.path
            else:
                page = await turn_views.older_on_path(
                    self.db, user_id=self.user.id, root_thread_id=root, before=before, limit=size
                )
            action["turns"] = self._turns(page)
            if page.more and page.turns:
                action["turnsNextCursor"] = self._path_cursor(root, page.turns[0].id)
                result["nextCursor"] = action["turnsNextCursor"]
        async with self.lock:
            envelope = {"channel": channel, "action": action, "serverSeq": self.seen_seq}
            self.send(self._action_message(envelope))
        return result

    # ---- client actions ----

    async def dispatch_action(self, params: Json) -> None:
        channel = params.get("channel")
        action = params.get("action")
        client_seq = params.get("clientSeq")
        if not isinstance(action, dict) or not isinstance(client_seq, int | float):
            raise RpcError(INVALID_PARAMS, "dispatchAction: channel, clientSeq, action required")
        origin = {"clientId": self.client_id, "clientSeq": client_seq}
        root = family_of(channel, "ahp-chat")
        channel = str(channel)
        kind = action.get("type")
        if kind == "chat/turnStarted":
            message = action.get("message")
            text = message.get("text") if isinstance(message, dict) else None
            if not isinstance(text, str):
                self._reject(channel, action, origin, "message.text: expected a string")
                return
            try:
                state = await history.get_history(
                    self.db,
                    user_id=self.user.id,
                    thread_id=root,
                    retains=self.settings.history_retains_branches,
                )
                async with self.lock:
                    turn = await self.turns.start_turn(
                        user_id=self.user.id, thread_id=state.working_thread_id, content=text
                    )
                    self.origins[turn.started_seq] = origin
            except DomainError as exc:
                self._reject(channel, action, origin, exc.message)
            return
        if kind == "chat/turnCancelled":
            task = asyncio.create_task(self._cancel(root, channel, action, origin))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)
            return
        self._reject(channel, action, origin, f"{kind}: not an action clients dispatch here")

    async def _cancel(self, root: str, channel: str, action: Json, origin: Json) -> None:
        try:
            state = await history.get_history(
                self.db,
                user_id=self.user.id,
                thread_id=root,
                retains=self.settings.history_retains_branches,
            )
            active = state.active_turn
            if active is None or active.turn_id != action.get("turnId"):
                raise InvalidInput(f"turn {action.get('turnId')} is not running")
            await self.turns.cancel(user_id=self.user.id, thread_id=root)
        except DomainError as exc:
            self._reject(channel, action, origin, exc.message)

    def _reject(self, channel: Any, action: Json, origin: Json, reason: str) -> None:
        envelope = {
            "channel": channel,
            "action": action,
            "serverSeq": self.seen_seq,
            "origin": origin,
            "rejectionReason": reason,
        }
        self.send(self._action_message(envelope))


def _now() -> Any:
    from app.domain import now

    return now()
