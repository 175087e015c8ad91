"""The turn-scoped transcript channel and how turn records join into a transcript."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from haico.agent.state import join_records, last_turns, turn_messages


def _turn(n: int, *, tool: bool = False) -> list[HumanMessage | AIMessage | ToolMessage]:
    human = HumanMessage(content=f"user {n}", id=f"h{n}")
    if not tool:
        return [human, AIMessage(content=f"reply {n}", id=f"a{n}")]
    call = {"name": "add_todo", "args": {"text": "x"}, "id": f"c{n}", "type": "tool_call"}
    return [
        human,
        AIMessage(content="", tool_calls=[call], id=f"a{n}"),
        ToolMessage(content="ok", tool_call_id=f"c{n}", id=f"t{n}"),
        AIMessage(content=f"done {n}", id=f"b{n}"),
    ]


def test_a_new_human_message_starts_a_new_turn() -> None:
    first = turn_messages([], _turn(1))
    assert [m.id for m in first] == ["h1", "a1"]
    second = turn_messages(first, [HumanMessage(content="user 2", id="h2")])
    assert [m.id for m in second] == ["h2"]
    second = turn_messages(second, [AIMessage(content="reply 2", id="a2")])
    assert [m.id for m in second] == ["h2", "a2"]


def test_a_known_human_message_completes_its_turn_in_place() -> None:
    # A failed run's checkpoint, then the record of the interrupted turn on top of it.
    failed = turn_messages([], _turn(1, tool=True)[:3])
    partial = AIMessage(content="Do", id="p1")
    recorded = turn_messages(failed, [HumanMessage(content="user 1", id="h1"), partial])
    assert [m.id for m in recorded] == ["h1", "a1", "t1", "p1"]


def test_a_human_message_without_id_is_a_new_turn() -> None:
    state = turn_messages([], _turn(1))
    state = turn_messages(state, [HumanMessage(content="next")])
    assert [m.content for m in state] == ["next"] and state[0].id


def test_records_join_oldest_first_keeping_the_latest_version() -> None:
    seed = _turn(1) + _turn(2)
    failed = _turn(3, tool=True)[:3]
    recorded = [*failed, AIMessage(content="Do", id="p3", additional_kwargs={"s": "error"})]
    joined = join_records([[], seed, failed, recorded, _turn(4)])
    assert [m.id for m in joined] == ["h1", "a1", "h2", "a2", "h3", "a3", "t3", "p3", "h4", "a4"]
    replaced = join_records(
        [[AIMessage(content="old", id="x")], [AIMessage(content="new", id="x")]]
    )
    assert [m.content for m in replaced] == ["new"]


def test_the_window_cuts_at_turn_boundaries() -> None:
    messages = _turn(1, tool=True) + _turn(2) + _turn(3, tool=True)
    assert [m.id for m in last_turns(messages, 1)] == ["h3", "a3", "t3", "b3"]
    assert last_turns(messages, 2)[0].id == "h2"
    assert last_turns(messages, 3) == messages
    assert last_turns(messages, 10) == messages
    assert last_turns(messages, 0) == []
