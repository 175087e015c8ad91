"""The offline model's `;`: it splits a line only where a command follows, so the text
of a `write:` (or any command) keeps its semicolons (issue: "…; it is a courtesy to
your future self" was cut off)."""

from __future__ import annotations

import os
from itertools import pairwise

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from haico.agent.models import is_command, parse_commands, split_parts

EXAMPLES = int(os.environ.get("HAICO_FUZZ_EXAMPLES", "60"))

SENTENCE = "Write the summary last; it is a courtesy to your future self"


def test_a_semicolon_inside_text_stays_in_the_text() -> None:
    calls, _ = parse_commands(f"write: {SENTENCE}")
    assert calls == [("write_document", {"text": SENTENCE})]


def test_a_command_that_takes_no_text_keeps_its_semicolon_apart() -> None:
    assert parse_commands("todo: a; done todo 1; thanks")[0] == [
        ("add_todo", {"text": "a"}),
        ("done_todo", {"position": 1}),
    ]
    assert parse_commands("lock preference 2;")[0] == [("lock_preference", {"position": 2})]


def test_a_semicolon_before_a_command_still_splits() -> None:
    calls, wait = parse_commands("write: first; and more; todo: call Ann;wait: 1; prefer: tea")
    assert calls == [
        ("write_document", {"text": "first; and more"}),
        ("add_todo", {"text": "call Ann"}),
        ("add_preference", {"text": "tea"}),
    ]
    assert wait == 1.0


def test_text_before_the_first_command_is_its_own_part() -> None:
    assert split_parts("hello; todo: a") == ["hello", " todo: a"]
    assert split_parts("a;;b;") == ["a;;b;"]
    assert parse_commands("objective: x;")[0] == [("set_objective", {"text": "x;"})]


# Text made of words, spaces, semicolons and command keywords, so that splits at
# commands and semicolons inside text are both drawn often.
_PIECES = st.sampled_from(
    [
        "write:",
        "todo:",
        "prefer:",
        "objective:",
        "wait: 1",
        "done todo 2",
        ";",
        "; ",
        " ",
        "a",
        "b c",
        "é",
        ":",
    ]
)
_LINES = st.lists(
    st.one_of(
        _PIECES,
        st.text(
            alphabet=st.characters(exclude_characters="\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"),
            max_size=8,
        ),
    ),
    max_size=12,
).map("".join)


@settings(
    max_examples=EXAMPLES,
    database=None,
    derandomize=True,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
@given(line=_LINES)
def test_no_character_of_a_line_is_lost(line: str) -> None:
    parts = split_parts(line)
    assert ";".join(parts) == line
    # a part after the first starts a command, or follows one that takes no text
    for before, part in pairwise(parts):
        assert is_command(part) or is_command(before)


@settings(
    max_examples=EXAMPLES,
    database=None,
    derandomize=True,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
@given(text=st.text(alphabet=st.sampled_from("abc ;,.é"), min_size=1, max_size=40))
def test_a_write_without_commands_keeps_every_character(text: str) -> None:
    calls, _ = parse_commands(f"write: {text}")
    # (a text of spaces alone is outside this rule: the parser has always written it as is)
    if text.strip():
        assert calls == [("write_document", {"text": text.strip()})]
