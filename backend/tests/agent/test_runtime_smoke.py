from __future__ import annotations

from tests.agent.conftest import Thread


async def test_smoke(thread: Thread) -> None:
    reply = await thread.turn("objective: Build a bridge; todo: a; subtodo: b\nprefer: short")
    print(reply, thread.events)
    print(await thread.workspace())
    reply = await thread.turn("hello")
    print(reply)
    for m in await thread.rt.messages(thread.thread_id):
        print(m)
