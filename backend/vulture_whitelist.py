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
# SQL, and tests/db/test_batched_writes.py checks parse_notice against it.
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
mean

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
# Sharing: who made a share (kept for the audit, written by the constructor).
created_by
# Coding: the agreement's pooled figures, a wire field read by clients.
overall

# haico.client's public methods: called from notebooks and scripts (docs/analysis.md,
# tests/client/), never from haico/ itself. `Route.many` and `routes.ALL` are read by
# tests/client/test_routes.py, which holds every route against the OpenAPI document.
_.conversation
_.create_conversation
_.to_pandas
_.delete_conversation
_.set_document
_.say
_.merge_preview
_.add_note
_.edit_note
_.cancel_job
_.create_codebook
_.create_study
_.edit_study
_.add_member
_.study_csv
_.edit_codebook
_.code_suggestions
_.delete_coding
_.dataset
_.study_dataset
_.many
ALL

# SQLAlchemy's TypeDecorator protocol (haico.db.base.Stamp): read by SQLAlchemy.
_.impl
_.cache_ok
_.process_bind_param
