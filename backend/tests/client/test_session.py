"""A whole research session through `haico.client` against a live `haico serve`: create,
stream a turn, branch, check out, merge, note, replay, export (to pandas and as a family
document), on SQLite and on PostgreSQL."""

from __future__ import annotations

import asyncio

import pytest

from haico.client import (
    Client,
    HaicoError,
    ToolCall,
    TurnCompleted,
    TurnStarted,
    WorkspaceChanged,
)
from haico.schemas.whatif import JobOut
from tests.server import Server


def session(url: str) -> None:
    with Client(url) as haico:
        assert haico.health().status == "ok"
        conv = haico.create_conversation(title="Essay", objective="A short essay")
        tid = conv.thread_id

        # A turn, streamed: its events typed, in order.
        events = list(haico.send(tid, "write: The first paragraph.\ntodo: find a title"))
        assert isinstance(events[0], TurnStarted) and events[0].node_id == f"{tid}:1"
        assert {e.name for e in events if isinstance(e, ToolCall)} >= {"add_todo"}
        assert any(isinstance(e, WorkspaceChanged) for e in events)
        done = events[-1]
        assert isinstance(done, TurnCompleted) and done.node_id == f"{tid}:1"
        assert haico.say(tid, "prefer: short sentences").node_id == f"{tid}:2"

        # A branch at turn 1 that adds its own todo.
        branch = haico.branch(tid, 1, reason="another plan")
        assert (branch.parent_thread_id, branch.branch_point_turn) == (tid, 1)
        source = haico.say(branch.thread_id, "todo: ask a friend to read it")
        assert source.node_id == f"{branch.thread_id}:2"
        assert haico.history(tid).head_turn_id == source.node_id

        # Back on the main line, then the branch's work brought in as a merge node.
        assert haico.checkout(tid, f"{tid}:2").head_turn_id == f"{tid}:2"
        plan = haico.merge_preview(tid, source.node_id)
        assert [(c.surface, c.kind) for c in plan.changes] == [("todo", "add")]
        merged = haico.merge(tid, source.node_id)
        assert merged.node_id == f"{tid}:3"
        todos = [t.text for t in haico.workspace(tid).todos]
        assert todos == ["find a title", "ask a friend to read it"]
        with pytest.raises(HaicoError) as again:
            haico.merge(tid, source.node_id)
        assert (again.value.status, again.value.code) == (422, "nothing_to_merge")
        graph = haico.graph(tid)
        assert {e.kind for e in graph.edges} == {"turn", "branch", "merge"}

        # The researcher's note on the merge node.
        note = haico.add_note(tid, 3, "the merge kept both todos", codes=["merge"])
        assert [n.id for n in haico.notes(tid)] == [note.id]
        assert haico.edit_note(note.id, codes=["merge", "todo"]).codes == ["merge", "todo"]
        assert [(c.code, c.count) for c in haico.codes()] == [("merge", 1), ("todo", 1)]

        # A replay of the main line's two turns with another profile, waited for.
        profile = haico.create_profile("terse", "offline", params={"seed": 7})
        job = haico.replay(tid, f"{tid}:1", f"{tid}:2", profile.id)
        seen: list[JobOut] = []
        ended = haico.wait(job, progress=seen.append, interval=0.2, timeout=120)
        assert ended.state == "done" and len(ended.thread_ids) == 1
        assert seen[-1] == ended and ended.progress.done == ended.progress.total == 2

        # The analysis export as a DataFrame: one row per node of the family.
        frame = haico.analysis_export(tid).to_pandas()
        nodes = {n.id for n in haico.graph(tid).nodes}
        # The main line 3, the branch 1, the replay 2.
        assert set(frame["node_id"]) == nodes and len(nodes) == 6
        row = frame.set_index("node_id").loc[merged.node_id]
        assert row["kind"] == "merge" and "the merge kept both todos" in row["notes"]
        assert len(haico.analysis_export().rows()) == len(nodes)

        # The family as a document, imported as a new family of its own.
        copy = haico.import_family(haico.export(tid))
        assert copy.thread_id != tid and copy.title == "Essay (imported)"
        assert [t.text for t in haico.workspace(copy.thread_id).todos] == todos

        # A refusal is one HaicoError with the server's code.
        haico.delete_conversation(copy.thread_id)
        with pytest.raises(HaicoError) as gone:
            haico.conversation(copy.thread_id)
        assert (gone.value.status, gone.value.code) == (404, "not_found")


async def test_a_whole_session_through_the_client(server_env: dict[str, str]) -> None:
    server = Server(server_env)
    await server.start()
    try:
        await asyncio.to_thread(session, server.url)
        log = server.log_tail(200)
    finally:
        server.stop()
    # `haico serve` says where the data lives.
    if "HAICO_DATABASE_URL" in server_env:
        assert "HAICO data: PostgreSQL postgresql://postgres@127.0.0.1:5432/" in log
    else:
        assert f"HAICO data: SQLite {server_env['HAICO_DATA_DIR']}/haico.db" in log
