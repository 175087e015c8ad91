"""docker-compose.yml with docker-compose.replicas.yml: two app replicas behind Caddy
on deploy/Caddyfile, which finds them through Docker's DNS. What a user notices when
one of them dies: a POST costs some latency and nothing else, a stream resumes with
nothing missed or repeated."""

from __future__ import annotations

import asyncio
import time

import httpx

from tests.compose.conftest import Stack, docker, figure
from tests.compose.streams import API, Follower, Turn, ends, ends_any, new_family

# The loop of POSTs: one every PACE seconds at most (about 40 a second here), for AFTER
# seconds after the kill; each adds a todo (a family holds at most 1000).
PACE = 0.025
AFTER = 8.0


def _leases(stack: Stack) -> dict[str, str]:
    """The running turns (node id) and the host each runs on, from their leases (a
    lease names its process as `host:pid:random`; the host is the container's)."""
    rows = stack.sql("SELECT thread_id || ':' || turn_index || ' ' || process_id FROM active_turns")
    return {node: process.split(":")[0] for node, process in (r.split(" ", 1) for r in rows)}


def _hostnames(stack: Stack) -> dict[str, str]:
    """The app containers' host names -> their container ids."""
    return {
        docker("inspect", "-f", "{{.Config.Hostname}}", cid).strip(): cid
        for cid in stack.containers("app")
    }


async def test_turns_spread_over_the_replicas(replicas: Stack) -> None:
    """Four turns started at once through the proxy run on both replicas."""
    hosts = _hostnames(replicas)
    assert len(hosts) == 2, hosts
    async with httpx.AsyncClient(base_url=replicas.url, timeout=30) as c:
        tids = [await new_family(c, f"spread {i}") for i in range(4)]
    turns = [Turn() for _ in tids]
    running = [
        asyncio.create_task(t.run(replicas.url, tid, "wait: 3"))
        for t, tid in zip(turns, tids, strict=True)
    ]
    seen: dict[str, str] = {}
    deadline = time.monotonic() + 30
    while len(seen) < len(turns) and time.monotonic() < deadline:
        seen.update(await asyncio.to_thread(_leases, replicas))
        await asyncio.sleep(0.2)
    await asyncio.wait_for(asyncio.gather(*running), 60)
    assert set(seen) == {t.node_id for t in turns}
    assert set(seen.values()) == set(hosts), seen
    assert all(t.completed for t in turns)


async def test_a_replica_killed_mid_stream_and_mid_posts(replicas: Stack) -> None:
    """Two followers of a family's event stream (the proxy gives each a replica) and a
    turn streaming from one replica; a loop of POSTs (a todo each) runs on another
    family, and between two of them the other replica is killed (SIGKILL, as a crash).

    Every POST is answered 201, and the family afterwards has each todo exactly once:
    the proxy carried the POSTs it first tried on the dead replica (whose address does
    not refuse, it lets the connection attempt hang) to the live one, body and all.
    The follower the dead replica served reconnects with Last-Event-ID and ends with
    exactly the log's actions, none missed or twice. A POST in flight on the replica
    at the instant it dies is not covered: its connection breaks, and a proxy cannot
    know whether it was applied."""
    url = replicas.url
    async with httpx.AsyncClient(base_url=url, timeout=30) as c:
        tid = await new_family(c, "stream")
        posts_tid = await new_family(c, "posts")
    followers = [Follower(url, tid) for _ in range(2)]
    following = []
    for f in followers:  # one at a time: round robin gives each a replica
        following.append(asyncio.create_task(f.run(ends_any)))
        await asyncio.wait_for(f.opened.wait(), 30)
    turn = Turn()
    posting = asyncio.create_task(turn.run(url, tid, "wait: 8"))
    await asyncio.wait_for(turn.started.wait(), 30)
    node = turn.node_id
    serving = (await asyncio.to_thread(_leases, replicas))[node]
    hosts = _hostnames(replicas)
    (victim,) = [cid for host, cid in hosts.items() if host != serving]

    deadline = time.monotonic() + 30
    while not all(any(e["action"]["type"] == "chat/delta" for _, _, e in f.got) for f in followers):
        assert time.monotonic() < deadline, "the followers saw no streamed text"
        await asyncio.sleep(0.05)

    # (start, end, status, body) of every POST, one every PACE seconds at most; the
    # kill happens between two of them, and the next is sent once the engine reports
    # the container dead (its process gone, its connections closed).
    posts: list[tuple[float, float, int, str]] = []
    kill_sent = killed_at = 0.0
    async with httpx.AsyncClient(base_url=url, timeout=60) as c:
        loop_start = time.monotonic()
        i = 0
        while True:
            now = time.monotonic()
            if not killed_at and now - loop_start > 1.0:
                kill_sent = time.monotonic()
                await asyncio.to_thread(docker, "kill", victim)
                await asyncio.to_thread(docker, "wait", victim)
                killed_at = time.monotonic()
            if killed_at and now - killed_at > AFTER:
                break
            start = time.monotonic()
            r = await c.post(f"{API}/{posts_tid}/todos", json={"text": f"post {i}"})
            posts.append((start, time.monotonic(), r.status_code, r.text[:200]))
            i += 1
            await asyncio.sleep(max(0.0, PACE - (time.monotonic() - start)))

    await asyncio.wait_for(posting, 60)
    assert turn.completed, turn.events[-1:]
    await asyncio.wait_for(asyncio.gather(*following), 60)

    # None lost (every POST answered 2xx and kept), none doubled.
    failed = [
        (round(s - killed_at, 2), round(e - s, 2), status, body)
        for s, e, status, body in posts
        if status != 201
    ]
    assert failed == [], (
        f"{len(failed)} of {len(posts)} POSTs not answered 201 (seconds after the kill, "
        f"seconds taken, status, body), the first: {failed[:5]}\nthe proxy's errors:\n"
        + "\n".join(replicas.compose("logs", "--no-color", "proxy").splitlines()[-15:])
    )
    async with httpx.AsyncClient(base_url=url, timeout=30) as c:
        r = await c.get(f"{API}/{posts_tid}/workspace")
        assert r.status_code == 200, r.text
        texts = [t["text"] for t in r.json()["todos"]]
    assert sorted(texts) == sorted(f"post {n}" for n in range(len(posts))), texts

    # The stream: the follower the victim served was cut once and resumed; every
    # follower holds the log's actions from its start to the turn's end, once, in order.
    whole = Follower(url, tid)
    await asyncio.wait_for(whole.run(ends(node)), 30)
    assert sorted(f.connections for f in followers) == [1, 2], [f.connections for f in followers]
    for f in followers:
        assert f.seqs() == whole.seqs()
    (cut,) = [f for f in followers if f.connections == 2]
    before = max(t for t, _, _ in cut.got if t < cut.cuts[0])
    after = min(t for t, _, _ in cut.got if t > cut.opens[1])
    kept = next(f for f in followers if f is not cut)
    normal = max(b - a for a, b in zip(kept.times(), kept.times()[1:], strict=False))

    latencies = [(s - killed_at, e - s) for s, e, _, _ in posts if s >= killed_at]
    slow = [(at, took) for at, took in latencies if took > 0.5]
    recovered = max((at + took for at, took in slow), default=0.0)
    figure("replica death: POSTs sent / lost / doubled", f"{len(posts)} / 0 / 0")
    figure(
        "replica death: slowest POST after the kill",
        f"{max(took for _, took in latencies):.2f} s ({len(slow)} over 0.5 s)",
    )
    figure("replica death: POSTs back to normal latency after", f"{recovered:.2f} s")
    figure("replica death: docker kill + docker wait", f"{killed_at - kill_sent:.2f} s")
    figure(
        "replica death: stream cut / reconnected, after `docker kill` was sent",
        f"{cut.cuts[0] - kill_sent:.2f} s / {cut.opens[1] - kill_sent:.2f} s",
    )
    figure(
        "replica death: stream gap (last event before the cut to first after)",
        f"{after - before:.2f} s (largest gap on the follower that was not cut: {normal:.2f} s)",
    )
