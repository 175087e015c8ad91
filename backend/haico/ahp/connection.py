"""One AHP connection: reading frames, dispatching JSON-RPC requests, the version
agreed (`initialize`, `reconnect`) and the connection's state.

The other modules of `haico.ahp` hold the rest: `protocol` (codes, URIs), `outbox` (the
bounded outgoing queue and the request rate), `delivery` (subscriptions and logged
actions in order), `snapshots`, and the command handlers by area
(`session_commands`, `history_commands`, `turn_commands`). Every operation calls the
same service function as its REST twin.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.websockets import WebSocketDisconnect

from haico.ahp import delivery, history_commands, session_commands, turn_commands
from haico.ahp.adapter import SUPPORTED, Adapter, BadVersion, negotiate
from haico.ahp.protocol import (
    INTERNAL,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    RATE_LIMITED,
    ROOT,
    TOO_BIG,
    UNSUPPORTED_VERSION,
    Json,
    RpcError,
    channel_root,
    params_of,
    rpc_error,
)
from haico.ahp.state import ConnectionState
from haico.ahp.turn_commands import INVALID_TEXT
from haico.db.outage import as_domain_error
from haico.domain import is_valid_text
from haico.errors import DomainError
from haico.services.coding.blind import visible_to
from haico.services.history import event_stream
from haico.services.sharing import shares
from haico.services.turns import log_replay
from haico.services.turns import views as turn_views

log = logging.getLogger("haico.ahp")

Handler = Callable[[ConnectionState, Json], Awaitable[Any]]
LINK_RECHECK_SECONDS = 2.0
LINK_ENDED = 1008  # close code: the share link was revoked or has expired
HANDLERS: dict[str, Handler] = {
    "subscribe": delivery.subscribe,
    "unsubscribe": delivery.unsubscribe,
    "listSessions": session_commands.list_sessions,
    "createSession": session_commands.create_session,
    "disposeSession": session_commands.dispose_session,
    "createChat": session_commands.create_chat,
    "fetchTurns": history_commands.fetch_turns,
    "checkoutChatHistory": history_commands.checkout,
    "dispatchAction": turn_commands.dispatch_action,
}


class Connection(ConnectionState):
    # ---- the connection's life ----

    async def run(self) -> None:
        ConnectionState.live.add(self)
        sender = asyncio.create_task(self.out.sender())
        reader = asyncio.create_task(self._reader())
        closed = asyncio.create_task(self.out.closed.wait())
        if self.settings.auth == "token":
            self.tasks.add(asyncio.create_task(self._watch_access()))
        try:
            await asyncio.wait({sender, reader, closed}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if self.out.closed.is_set() and self.out.close_code == 1000 and not reader.done():
                # A normal close asked by the host (after -32005): flush first.
                self.out.finish()
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(asyncio.shield(sender), timeout=2)
            for task in (reader, closed, sender, self.pump, *self.tasks):
                if task is not None:
                    task.cancel()
            for task in (reader, sender, self.pump):
                if task is not None:
                    with contextlib.suppress(BaseException):
                        await task
            if self.out.closed.is_set():
                await self.out.close()
            ConnectionState.live.discard(self)

    async def _watch_access(self) -> None:
        """Shares end while connections stay open. Every few seconds: a link's
        connection closes (1008, policy) once its link is revoked or expired; a
        grantee's subscriptions to a family it may no longer read are dropped. The
        owner's own families cost one lookup each, once."""
        owners: dict[str, int | None] = {}
        while True:
            await asyncio.sleep(LINK_RECHECK_SECONDS)
            with contextlib.suppress(DomainError):
                if self.user.share_id is not None and not await shares.link_alive(
                    self.db, share_id=self.user.share_id
                ):
                    self.out.shutdown(LINK_ENDED)
                    return
                await self._drop_lost(owners)

    async def _drop_lost(self, owners: dict[str, int | None]) -> None:
        by_root: dict[str, list[str]] = {}
        for channel in list(self.subs):
            if channel != ROOT:
                with contextlib.suppress(RpcError):
                    by_root.setdefault(channel_root(channel), []).append(channel)
        for root, channels in by_root.items():
            if root not in owners:
                owners[root] = await turn_views.owner_of_family(self.db, root)
            if owners[root] == self.user.id:
                continue
            if await event_stream.still_allowed(self.db, principal=self.user, thread_id=root):
                for channel in channels:
                    self.subs.pop(channel, None)
                self.my_roots.discard(root)

    async def _reader(self) -> None:
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
            if self.intake.too_big(text):
                self.out.shutdown(TOO_BIG)
                return
            await self._handle(text)

    async def _handle(self, text: str) -> None:
        try:
            msg = json.loads(text)
        except ValueError:
            self.out.error(None, RpcError(PARSE_ERROR, "Parse error: not JSON"))
            return
        if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
            self.out.error(None, RpcError(INVALID_REQUEST, "Invalid Request: not JSON-RPC 2.0"))
            return
        msg_id = msg.get("id")
        if not _valid_id(msg_id):
            # JSON-RPC ids are strings, numbers or null; anything else is not echoed.
            self.out.error(None, RpcError(INVALID_REQUEST, "Invalid Request: bad id"))
            return
        method = msg.get("method")
        is_request = "id" in msg
        if not isinstance(method, str):
            if "result" in msg or "error" in msg:
                return  # a response to nothing we asked: ignore
            self.out.error(msg_id, RpcError(INVALID_REQUEST, "Invalid Request: no method"))
            return
        if not self.intake.allow():
            if is_request:
                self.out.error(msg_id, RpcError(RATE_LIMITED, "Too many requests; slow down"))
            return
        if method != "dispatchAction" and not is_valid_text(msg.get("params")):
            # (A dispatched action is refused by echoing it with its reason instead.)
            if is_request:
                self.out.error(msg_id, RpcError(INVALID_PARAMS, f"Invalid params: {INVALID_TEXT}"))
            return
        try:
            result = await self._dispatch(method, msg)
        except RpcError as err:
            if is_request:
                self.out.error(msg_id, err)
            if err.code == UNSUPPORTED_VERSION:
                self.out.shutdown(1000)  # after the error is sent
            return
        except DomainError as exc:
            if is_request:
                self.out.error(msg_id, rpc_error(exc))
            return
        except Exception as exc:
            known = as_domain_error(exc)
            if known is None:
                log.exception("AHP %s failed", method)
            else:
                log.warning("AHP %s: %s: %s", method, known.code, exc)
            if is_request:
                error = rpc_error(known) if known else RpcError(INTERNAL, "Internal error")
                self.out.error(msg_id, error)
            return
        if is_request:
            self.out.reply(msg_id, result)

    async def _dispatch(self, method: str, msg: Json) -> Any:
        params = params_of(msg)
        if method == "initialize":
            return await self.initialize(params)
        if method == "reconnect":
            return await self.reconnect(params)
        if method == "ping":
            return {}
        if self.adapter is None:
            raise RpcError(INVALID_REQUEST, "initialize first")
        handler = HANDLERS.get(method)
        if handler is None:
            raise RpcError(METHOD_NOT_FOUND, f"Method not found: {method}")
        return await handler(self, params)

    # ---- versions ----

    def _agree(self, offered: Any) -> str:
        try:
            version = negotiate(offered) if isinstance(offered, list) else None
        except BadVersion as exc:
            raise RpcError(INVALID_PARAMS, str(exc)) from exc
        if version is None:
            raise RpcError(
                UNSUPPORTED_VERSION,
                f"Unsupported protocol version; this host speaks {', '.join(SUPPORTED)}",
                {"supportedVersions": list(SUPPORTED)},
            )
        return version

    def _start(self, version: str, client_id: Any) -> None:
        if not isinstance(client_id, str) or not client_id:
            raise RpcError(INVALID_PARAMS, "clientId: expected a non-empty string")
        self.adapter = Adapter(version)
        self.client_id = client_id
        self.out.name = client_id

    async def initialize(self, params: Json) -> Json:
        if self.adapter is not None:
            raise RpcError(INVALID_REQUEST, "already initialized")
        offered = params.get("protocolVersions")
        if not isinstance(offered, list) or not all(isinstance(v, str) for v in offered):
            raise RpcError(INVALID_PARAMS, "protocolVersions: expected a list of strings")
        version = self._agree(offered)
        self._start(version, params.get("clientId"))
        wanted = params.get("initialSubscriptions") or []
        if not isinstance(wanted, list):
            raise RpcError(INVALID_PARAMS, "initialSubscriptions: expected a list")
        position = await log_replay.log_position(self.db)
        self.seen_seq = position
        snapshots = [await delivery.snapshot(self, ROOT)]
        for channel in wanted:
            if channel == ROOT:
                continue
            with contextlib.suppress(RpcError, DomainError):
                snapshots.append(await delivery.snapshot(self, channel))
        delivery.start_pump(self, position)
        return {
            "protocolVersion": version,
            "serverSeq": position,
            "serverInfo": {"name": "haico", "version": "0.1.0"},
            "snapshots": snapshots,
        }

    async def reconnect(self, params: Json) -> Json:
        """Replay what the client missed from the log, or fresh snapshots when the log
        no longer reaches back to `lastSeenServerSeq`; `missing` lists gone channels."""
        if self.adapter is None:
            self._start(
                self._agree(params.get("protocolVersions") or ["1.0.0"]), params.get("clientId")
            )
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
                root = channel_root(channel)
                await turn_views.session(self.db, principal=self.user, root_thread_id=root)
                roots[channel] = root
            except (RpcError, DomainError):
                missing.append(channel)
        async with self.lock:
            # The replay and the position the pump goes on from are read at one moment:
            # an action appended in between would be in neither.
            found = await log_replay.replay_to_now(
                self.db, after=int(last), root_thread_ids=set(roots.values())
            )
            if found is None:
                snaps = [
                    await delivery.snapshot_locked(self, c) for c in channels if c not in missing
                ]
                delivery.start_pump(self, min((s["fromSeq"] for s in snaps), default=0))
                return {"type": "snapshot", "snapshots": snaps}
            entries, position = found
            actions = [
                await delivery.envelope(self, seq, channel, action, roots[channel])
                for seq, channel, action in entries
                if channel in roots
                and await visible_to(
                    self.db, self.blind, root_thread_id=roots[channel], action=action
                )
            ]
            for channel in channels:
                if channel not in missing:
                    self.subs[channel] = position
                    if channel != ROOT:
                        self.my_roots.add(roots[channel])
            if self.pump is None:
                self.seen_seq = position
                delivery.start_pump(self, position)
            return {"type": "replay", "actions": actions, "missing": missing}


def _valid_id(msg_id: object) -> bool:
    return msg_id is None or (
        isinstance(msg_id, str | int | float) and not isinstance(msg_id, bool)
    )
