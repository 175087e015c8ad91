"""One simulated researcher of the soak run: its loop over the mix of operations and
how it tells an expected outcome of concurrency from an error (see `bench.soak`)."""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any

import httpx

from bench.soak_support import (
    EXPECTED_409,
    SHARED_P,
    Family,
    Stats,
    error_code,
    node_thread,
    parse_sse,
    words,
)


class Researcher:
    def __init__(self, n: int, base: str, stats: Stats, families: list[Family], end: float) -> None:
        self.n = n
        self.base = base
        self.stats = stats
        self.all_families = families
        self.mine: list[Family] = []
        self.end = end
        self.c: httpx.AsyncClient

    # -- one request, classified --

    async def call(
        self,
        op: str,
        method: str,
        path: str,
        fam: Family | None = None,
        thread: str | None = None,
        ok: tuple[int, ...] = (200, 201, 204),
        **kw: Any,
    ) -> httpx.Response | None:
        """The response when it is a success; None (recorded) otherwise."""
        t0 = time.perf_counter()
        try:
            r = await self.c.request(method, f"{self.base}{path}", **kw)
        except httpx.HTTPError as e:
            ms = (time.perf_counter() - t0) * 1000
            self.stats.error(op, ms, f"{method} {path}: transport {type(e).__name__}: {e}")
            return None
        ms = (time.perf_counter() - t0) * 1000
        if r.status_code in ok:
            if op in ("send", "send_draft"):
                return self._turn(op, ms, method, path, r, fam)
            self.stats.ok(op, ms)
            return r
        await self._failure(op, ms, method, path, r, fam, thread)
        return None

    def _turn(
        self,
        op: str,
        ms: float,
        method: str,
        path: str,
        r: httpx.Response,
        fam: Family | None,
    ) -> httpx.Response | None:
        events = parse_sse(r.text)
        if not events or events[-1][0] != "turn_completed":
            last = events[-1] if events else ("(no event)", None)
            self.stats.error(op, ms, f"{method} {path}: stream ended with {str(last)[:300]}")
            return None
        self.stats.ok(op, ms)
        self.stats.turns_completed += 1
        node = events[-1][1].get("node_id") if isinstance(events[-1][1], dict) else None
        if fam is not None and node:
            fam.head = node
            fam.working = node_thread(node)
            fam.drafts.discard(fam.working)
        return r

    async def _failure(
        self,
        op: str,
        ms: float,
        method: str,
        path: str,
        r: httpx.Response,
        fam: Family | None,
        thread: str | None,
    ) -> None:
        code = error_code(r)
        if r.status_code == 409 and code in EXPECTED_409:
            self.stats.expected(op, ms, f"409 {code}")
            return
        if r.status_code == 404 and fam is not None and thread in fam.drafts:
            # A restored draft another researcher's checkout discarded: the history
            # must say it is no longer the working thread.
            h = await self.c.get(f"{self.base}/api/conversations/{fam.root}/history")
            if h.status_code == 200 and h.json()["working_thread_id"] != thread:
                fam.drafts.discard(thread)
                fam.head = h.json()["head_turn_id"]
                fam.working = h.json()["working_thread_id"]
                self.stats.expected(op, ms, "404 draft discarded")
                return
        self.stats.error(op, ms, f"{method} {path}: {r.status_code} {r.text[:300]}")

    # -- the mix --

    def pick_family(self) -> Family | None:
        if self.all_families and random.random() < SHARED_P:
            return random.choice(self.all_families)
        if not self.mine:
            return None
        return self.mine[-1] if random.random() < 0.5 else random.choice(self.mine)

    async def run(self) -> None:
        limits = httpx.Limits(max_connections=4, max_keepalive_connections=4)
        async with httpx.AsyncClient(timeout=300, limits=limits) as self.c:
            await asyncio.sleep(random.uniform(0, 2))
            await self.create()
            while time.monotonic() < self.end:
                await self.step()
                await asyncio.sleep(random.uniform(0.1, 1.0))

    async def step(self) -> None:
        if not self.mine or random.random() < 0.03:
            await self.create()
            return
        fam = self.pick_family()
        if fam is None:
            return
        if random.random() < 0.3:  # the client refetches the history state
            await self.read_history(fam)
        action = random.choices(
            (
                self.send,
                self.edit,
                self.branch,
                self.checkout,
                self.read_graph,
                self.read_workspace,
                self.read_messages,
                self.read_list,
                self.follow_events,
            ),
            weights=(30, 14, 5, 9, 8, 6, 6, 2, 2),
        )[0]
        await action(fam)

    async def create(self) -> None:
        r = await self.call(
            "create",
            "POST",
            "/api/conversations",
            json={"title": f"r{self.n} {words(3)}", "objective": words(6)},
        )
        if r is None:
            return
        tid = r.json()["thread_id"]
        fam = Family(root=tid, owner=self.n, working=tid)
        self.mine.append(fam)
        self.all_families.append(fam)

    def message(self) -> str:
        parts = []
        if random.random() < 0.3:
            parts.append(f"objective: {words(5)}")
        if random.random() < 0.6:
            parts.append(f"todo: {words(4)}")
        if random.random() < 0.5:
            parts.append(f"write: {words(12)}")
        if random.random() < 0.2:
            parts.append(f"prefer: {words(3)}")
        if not parts:
            return f"what should I read next about {words(3)}?"
        return "; ".join(parts)

    async def send(self, fam: Family) -> None:
        thread = fam.working or fam.root
        op = "send_draft" if thread in fam.drafts else "send"
        await self.call(
            op,
            "POST",
            f"/api/conversations/{thread}/turns",
            fam,
            thread,
            json={"content": self.message()},
        )

    async def edit(self, fam: Family) -> None:
        thread = fam.working or fam.root
        base = f"/api/conversations/{thread}"
        kind = random.choice(("objective", "todo", "preference", "document", "todo_done"))
        if kind == "objective":
            await self.call(
                "edit", "PUT", f"{base}/objective", fam, thread, json={"text": words(6)}
            )
        elif kind == "todo":
            await self.call("edit", "POST", f"{base}/todos", fam, thread, json={"text": words(4)})
        elif kind == "preference":
            await self.call(
                "edit",
                "POST",
                f"{base}/preferences",
                fam,
                thread,
                json={"text": words(4)},
            )
        elif kind == "document":
            body = {
                "title": words(2),
                "content": "\n".join(words(12) for _ in range(8)),
            }
            await self.call("edit", "PUT", f"{base}/document", fam, thread, json=body)
        else:
            ws = await self.call("workspace", "GET", f"{base}/workspace", fam, thread)
            todos = ws.json()["todos"] if ws is not None else []
            if todos:
                todo = random.choice(todos)
                await self.call(
                    "edit",
                    "PATCH",
                    f"{base}/todos/{todo['id']}",
                    fam,
                    thread,
                    json={"done": not todo["done"]},
                )

    async def read_history(self, fam: Family) -> dict[str, Any] | None:
        r = await self.call("history", "GET", f"/api/conversations/{fam.root}/history", fam)
        if r is None:
            return None
        h: dict[str, Any] = r.json()
        fam.head, fam.working = h["head_turn_id"], h["working_thread_id"]
        if fam.head is not None and node_thread(fam.head) != fam.working:
            fam.drafts.add(fam.working)
        return h

    async def read_graph(self, fam: Family) -> dict[str, Any] | None:
        r = await self.call("graph", "GET", f"/api/conversations/{fam.root}/graph", fam)
        if r is None:
            return None
        g: dict[str, Any] = r.json()
        fam.head = g["head_turn_id"]
        return g

    async def read_workspace(self, fam: Family) -> None:
        thread = fam.working or fam.root
        await self.call("workspace", "GET", f"/api/conversations/{thread}/workspace", fam, thread)

    async def read_messages(self, fam: Family) -> None:
        thread = fam.working or fam.root
        await self.call("messages", "GET", f"/api/conversations/{thread}/messages", fam, thread)

    async def read_list(self, fam: Family) -> None:
        await self.call("list", "GET", "/api/conversations")

    async def branch(self, fam: Family) -> None:
        g = await self.read_graph(fam)
        if g is None:
            return
        candidates = []
        for t in g["threads"]:
            lo = t["branch_point_turn"] or 0
            if not t["deleted"] and t["turn_index"] - lo >= 2:
                candidates.append((t["thread_id"], lo, t["turn_index"]))
        if not candidates:
            await self.send(fam)
            return
        thread, lo, hi = random.choice(candidates)
        await self.call(
            "branch",
            "POST",
            f"/api/conversations/{thread}/branch",
            fam,
            thread,
            json={"from_turn": random.randint(lo + 1, hi - 1), "reason": words(4)},
        )

    async def checkout(self, fam: Family) -> None:
        g = await self.read_graph(fam)
        if g is None:
            return
        nodes = [n["id"] for n in g["nodes"] if n["id"] != g["head_turn_id"]]
        if not nodes:
            await self.send(fam)
            return
        target = random.choice(nodes)
        path = f"/api/conversations/{fam.root}/checkout"
        body = {"turn_id": target, "expected_head_turn_id": g["head_turn_id"]}
        t0 = time.perf_counter()
        try:
            r = await self.c.post(f"{self.base}{path}", json=body)
        except httpx.HTTPError as e:
            ms = (time.perf_counter() - t0) * 1000
            self.stats.error("checkout", ms, f"POST {path}: transport {e!r}")
            return
        ms = (time.perf_counter() - t0) * 1000
        if r.status_code == 409 and error_code(r) == "checkout_would_discard_changes":
            self.stats.expected("checkout", ms, "409 checkout_would_discard_changes")
            if fam.owner != self.n:  # not ours to discard
                return
            r2 = await self.call("checkout_force", "POST", path, fam, json={**body, "force": True})
            if r2 is None:
                return
            r = r2
        elif r.status_code != 200:
            await self._failure("checkout", ms, "POST", path, r, fam, None)
            return
        else:
            self.stats.ok("checkout", ms)
        h = r.json()
        fam.head, fam.working = h["head_turn_id"], h["working_thread_id"]
        if fam.head is not None and node_thread(fam.head) != fam.working:
            fam.drafts.add(fam.working)
        # a researcher who restores an earlier state usually continues from it
        if fam.owner == self.n and random.random() < 0.6:
            await asyncio.sleep(random.uniform(0.1, 1.0))
            if random.random() < 0.4:
                await self.edit(fam)
            await self.send(fam)

    async def follow_events(self, fam: Family) -> None:
        path = f"/api/conversations/{fam.root}/events"
        seconds = random.uniform(2, 5)
        t0 = time.perf_counter()
        try:
            async with self.c.stream("GET", f"{self.base}{path}?after={fam.last_seq}") as r:
                ms = (time.perf_counter() - t0) * 1000
                if r.status_code != 200:
                    await r.aread()
                    await self._failure("events", ms, "GET", path, r, fam, None)
                    return
                self.stats.ok("events", ms)
                try:
                    async with asyncio.timeout(seconds):
                        async for line in r.aiter_lines():
                            if line.startswith("id:"):
                                fam.last_seq = max(fam.last_seq, int(line[3:].strip()))
                                self.stats.sse_events += 1
                except TimeoutError:
                    pass
        except httpx.HTTPError as e:
            ms = (time.perf_counter() - t0) * 1000
            self.stats.error("events", ms, f"GET {path}: transport {e!r}")
