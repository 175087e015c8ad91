# Names vulture (`make lint`) cannot see being used: read by a framework, a protocol or
# the tests, never by name in app/. Vulture only parses this file; it is never run.
# A name goes here with the reason it is not dead; anything else it reports is.
# ruff: noqa

# LangChain calls these on the offline chat model (a BaseChatModel subclass); the
# `bind_tools` signature keeps LangChain's `tool_choice` keyword.
_._llm_type
_._generate
_._agenerate
_._stream
tool_choice

# A Protocol's parameter (asyncio transports' `get_extra_info`).
default

# pysqlite's connection attribute, set so that SQLAlchemy's BEGIN is the only one.
_.isolation_level

# Alembic's include_object hook signature (alembic/env.py passes the function).
compare_to
obj
reflected

# The NOTIFY payload's format as Python; the append statement builds the same text in
# SQL, and tests/test_batched_writes.py checks parse_notice against it.
notify_payload

# Response fields (pydantic): filled by keyword, read by the clients, not by app/.
database
backend
artifact_count
is_on_active_path
retains_branches
diff
added_lines
removed_lines
exported_at
parent_node_id
conflict_fields

# The context window's size, read by the tests of the window.
shown_turns

# The research ledger's provenance fields: columns and wire fields, written and read
# through `ledger.PROVENANCE_FIELDS` by name (getattr, keyword expansion).
profile_id
instructions_sha256
# Big trees: a wire field read by clients, and the wait the summary tests use.
idle

# What if: provenance fields written and read through `ledger.PROVENANCE_FIELDS` by
# name, and wire fields the studio and API clients read.
profile_name
ignored_params
temperature
a_step
b_step
totals
