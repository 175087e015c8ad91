"""The offline model's command table (docs/api.md, "The offline model"), without storage."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from haico.agent.models import MAX_WAIT_SECONDS, OfflineChatModel, parse_commands, plan_reply
from haico.agent.prompts import SUMMARY_PREFIX
from haico.agent.tools import TOOLS_BY_NAME


@pytest.mark.parametrize(
    ("text", "tool", "args"),
    [
        ("objective: Map the field", "set_objective", {"text": "Map the field"}),
        ("title: Survey", "set_document_title", {"title": "Survey"}),
        ("write: A paragraph.", "write_document", {"text": "A paragraph."}),
        ("replace document: New body", "replace_document", {"content": "New body"}),
        ("prefer: short answers", "add_preference", {"text": "short answers"}),
        ("lock preference 2", "lock_preference", {"position": 2}),
        ("unlock preference 1", "unlock_preference", {"position": 1}),
        ("remove preference 3", "remove_preference", {"position": 3}),
        ("todo: read papers", "add_todo", {"text": "read papers"}),
        ("add todo: read papers", "add_todo", {"text": "read papers"}),
        ("subtodo: the 2019 one", "add_subtodo", {"text": "the 2019 one"}),
        ("done todo 1", "done_todo", {"position": 1}),
        ("undo todo 1", "undo_todo", {"position": 1}),
        ("remove todo 2", "remove_todo", {"position": 2}),
        ("artifact Notes: a: b", "create_artifact", {"title": "Notes", "content": "a: b"}),
    ],
)
def test_each_command_is_one_tool_call(text: str, tool: str, args: dict[str, object]) -> None:
    assert tool in TOOLS_BY_NAME
    assert parse_commands(text) == ([(tool, args)], 0.0)
    assert parse_commands("  " + text.upper() + "  ")[0][0][0] == tool


def test_lines_and_semicolons_split_commands_and_other_text_is_ignored() -> None:
    calls, wait = parse_commands("hello; todo: a\nprefer: b;wait: 2\nlock preference x")
    assert calls == [("add_todo", {"text": "a"}), ("add_preference", {"text": "b"})]
    assert wait == 2.0
    assert parse_commands("wait: 600")[1] == MAX_WAIT_SECONDS


def test_plain_text_describes_the_workspace_and_results_get_a_summary() -> None:
    system = SystemMessage(content=f"rules\n{SUMMARY_PREFIX}no objective yet; 2 todos (1 done).")
    plan = plan_reply([system, HumanMessage(content="how are we doing?")])
    assert not plan.tool_calls and "2 todos (1 done)" in plan.text

    first = plan_reply([system, HumanMessage(content="todo: x")])
    assert [c["name"] for c in first.tool_calls] == ["add_todo"] and first.text == ""
    call = AIMessage(content="", tool_calls=first.tool_calls)
    result = ToolMessage(content="Added todo “x”.", tool_call_id=str(first.tool_calls[0]["id"]))
    after = plan_reply([system, HumanMessage(content="todo: x"), call, result])
    assert after.text == "Done. Added todo “x”." and not after.tool_calls


async def test_streams_word_by_word_and_binds_tools() -> None:
    model = OfflineChatModel().bind_tools(list(TOOLS_BY_NAME.values()))
    chunks = [c async for c in model.astream([HumanMessage(content="hi there")])]
    assert len(chunks) > 5
    message = await model.ainvoke([HumanMessage(content="todo: a; subtodo: b")])
    assert [(c["name"], c["args"]) for c in message.tool_calls] == [
        ("add_todo", {"text": "a"}),
        ("add_subtodo", {"text": "b"}),
    ]
