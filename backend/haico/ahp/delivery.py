"""Subscriptions and the delivery of logged actions, in `serverSeq` order.

Each connection runs one pump over the process's event bus. A subscription remembers
the `serverSeq` its snapshot stands at; only later actions of its channel reach it.
When the pump is already past a new snapshot, the gap is read from the log at once.
`root/sessionAdded` and `root/sessionRemoved` are derived from the logged
`haico/threadChanged` actions of root threads, so a family created or deleted through
REST (or by another process) is announced like one made over AHP.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import weakref
from collections import OrderedDict
from typing import Any

from haico.ahp import snapshots
from haico.ahp.adapter import canonical, turn_from
from haico.ahp.protocol import (
    ANNOTATIONS,
    INVALID_PARAMS,
    ROOT,
    Json,
    RpcError,
    action_message,
    channel_root,
    family_of,
    notification,
    session_uri,
)
from haico.ahp.state import ConnectionState
from haico.domain import LoggedAction, now
from haico.errors import DomainError
from haico.services.coding.blind import visible_to
from haico.services.turns import log_replay
from haico.services.turns import views as turn_views

# Canonical actions shared by every connection of the process, by database and
# serverSeq (a logged `chat/turnsLoaded` expanded to full turns once, not once per
# subscriber). Keyed by database too: two apps in one process (the tests) each have
# their own log, and their serverSeqs overlap.
_canonical_caches: weakref.WeakKeyDictionary[Any, OrderedDict[int, Json]] = (
    weakref.WeakKeyDictionary()
)
_CACHE_SIZE = 4096
# The same logged action, encoded once per version shape and database (a connection
# without an origin of its own for it gets the shared text): with many subscribers
# on one chat, each streamed delta is serialised once, not once per connection.
_text_caches: weakref.WeakKeyDictionary[Any, OrderedDict[tuple[int, bool], str]] = (
    weakref.WeakKeyDictionary()
)


# ---- subscribing ----


async def snapshot(conn: ConnectionState, channel: Any) -> Json:
    async with conn.lock:
        return await snapshot_locked(conn, channel)


async def snapshot_locked(conn: ConnectionState, channel: Any) -> Json:
    """The channel's snapshot; the channel is subscribed from the snapshot on."""
    limit = conn.settings.ahp_max_subscriptions
    if channel not in conn.subs and len(conn.subs) >= limit:
        raise RpcError(INVALID_PARAMS, f"too many subscriptions (at most {limit})")
    if channel == ROOT:
        snap = await snapshots.root_snapshot(conn)
    elif (
        isinstance(channel, str)
        and channel.startswith("ahp-session:")
        and channel.endswith(ANNOTATIONS)
    ):
        snap = await snapshots.annotations_snapshot(conn, channel_root(channel))
    elif isinstance(channel, str) and channel.startswith("ahp-session:"):
        snap = await snapshots.session_snapshot(conn, family_of(channel, "ahp-session"))
    elif isinstance(channel, str) and channel.startswith("ahp-chat:"):
        snap = await snapshots.chat_snapshot(conn, family_of(channel, "ahp-chat"))
    else:
        raise RpcError(INVALID_PARAMS, f"channel: unknown channel {channel!r}")
    at = int(snap["fromSeq"])
    conn.subs[channel] = at
    if channel != ROOT and at < conn.seen_seq:
        # The pump is past the snapshot: deliver the gap of this channel now.
        root = channel_root(channel)
        for seq, ch, action in (
            await log_replay.replay(conn.db, after=at, root_thread_ids={root}) or []
        ):
            if (
                ch == channel
                and seq <= conn.seen_seq
                and await visible_to(conn.db, conn.blind, root_thread_id=root, action=action)
            ):
                conn.out.send(action_message(await envelope(conn, seq, ch, action, root)))
        conn.subs[channel] = conn.seen_seq
    return snap


async def subscribe(conn: ConnectionState, params: Json) -> Json:
    return {"snapshot": await snapshot(conn, params.get("channel"))}


async def unsubscribe(conn: ConnectionState, params: Json) -> None:
    conn.subs.pop(str(params.get("channel")), None)


# ---- envelopes ----


async def _canonical(conn: ConnectionState, seq: int, action: Json, root: str | None) -> Json:
    cache = _canonical_caches.setdefault(conn.db, OrderedDict())
    cached = cache.get(seq)
    if cached is not None:
        return cached
    if action.get("type") == "chat/turnsLoaded" and root is not None:
        ids = [str(t.get("id")) for t in action.get("turns") or []]
        page = await turn_views.turns_by_id(conn.db, root_thread_id=root, turn_ids=ids)
        out: Json = {
            "type": "chat/turnsLoaded",
            "turns": {r.id: turn_from(r, page.actions.get(r.id, [])) for r in page.turns},
        }
    else:
        out = canonical(action)
    cache[seq] = out
    while len(cache) > _CACHE_SIZE:
        cache.popitem(last=False)
    return out


async def envelope(
    conn: ConnectionState, seq: int, channel: str, action: Json, root: str | None
) -> Json:
    assert conn.adapter is not None
    out: Json = {
        "channel": channel,
        "action": conn.adapter.action(await _canonical(conn, seq, action, root)),
        "serverSeq": seq,
    }
    origin = conn.origins.pop(seq, None)
    if origin is not None:
        out["origin"] = origin
    return out


# ---- the pump ----


def start_pump(conn: ConnectionState, after: int) -> None:
    if conn.pump is None:
        conn.pump = asyncio.create_task(_pump(conn, after))


async def _pump(conn: ConnectionState, after: int) -> None:
    stream = conn.bus.stream(root_thread_ids=None, after=after)
    try:
        async for entry in stream:
            async with conn.lock:
                try:
                    await _deliver(conn, entry)
                finally:
                    conn.seen_seq = entry.seq
                    conn.progress.set()
    finally:
        await stream.aclose()


async def _deliver(conn: ConnectionState, entry: LoggedAction) -> None:
    channel, action = entry.channel, entry.action
    if (
        ROOT in conn.subs
        and action.get("type") == "haico/threadChanged"
        and action.get("threadId") == entry.root_thread_id
    ):
        await _root_notification(conn, str(entry.root_thread_id), str(action.get("change")))
    at = conn.subs.get(channel)
    if at is None or entry.seq <= at:
        return
    root = entry.root_thread_id
    if not await visible_to(conn.db, conn.blind, root_thread_id=root, action=action):
        return  # someone else's coding while this follower codes blind
    if entry.seq in conn.origins:  # the dispatcher's own echo carries its origin
        conn.out.send(action_message(await envelope(conn, entry.seq, channel, action, root)))
        return
    assert conn.adapter is not None
    cache = _text_caches.setdefault(conn.db, OrderedDict())
    key = (entry.seq, conn.adapter.current)
    text = cache.get(key)
    if text is None:
        message = action_message(await envelope(conn, entry.seq, channel, action, root))
        text = cache[key] = json.dumps(message)
        while len(cache) > _CACHE_SIZE:
            cache.popitem(last=False)
    conn.out.send(text)


async def _root_notification(conn: ConnectionState, root: str, change: str) -> None:
    if change == "created":
        if await turn_views.owner_of_family(conn.db, root) != conn.user.id:
            return
        conn.my_roots.add(root)
        record = turn_views.SessionRecord(root, "", now(), now())
        with contextlib.suppress(DomainError):
            record = await turn_views.session(conn.db, principal=conn.user, root_thread_id=root)
        summary = snapshots.session_summary(conn, record)
        conn.out.send(notification("root/sessionAdded", {"channel": ROOT, "summary": summary}))
    elif change == "deleted" and root in conn.my_roots:
        conn.my_roots.discard(root)
        conn.out.send(
            notification("root/sessionRemoved", {"channel": ROOT, "session": session_uri(root)})
        )


async def caught_up(conn: ConnectionState) -> None:
    """Wait (briefly) until the pump has delivered everything committed so far, so a
    response follows the actions of the change it answers."""
    target = await log_replay.log_position(conn.db)
    conn.bus.wake()
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(5):
            while conn.seen_seq < target:
                conn.progress.clear()
                await conn.progress.wait()
