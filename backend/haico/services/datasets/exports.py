"""A family's exports: who may have them, and what goes in. Any reader of the family
may export it; the codings and judgments in an export are the ones the caller sees
(`rule.sees_every_coding`: their own while coding is blind). Everything is read in
one read transaction, then written off the event loop."""

from __future__ import annotations

import asyncio
from typing import Literal

from haico.db.engine import Database
from haico.db.models import Conversation
from haico.services.access import rule as access
from haico.services.access.principal import Principal
from haico.services.access.rule import Deed
from haico.services.coding.codings import reader_of
from haico.services.coding.study_side import study_reader
from haico.services.datasets import parquet as parquet_format
from haico.services.datasets import preferences, qdpx, tree_jsonl
from haico.services.datasets.material import (
    Material,
    Tag,
    codes_for,
    load_families,
    load_family,
)

JsonlFormat = Literal["tree", "preferences"]


async def family_material(
    db: Database, *, principal: Principal, thread_id: str
) -> tuple[Material, str]:
    """The family's material as the caller may see it, and the family's title."""
    access.permit(principal, Deed.EXPORT)
    async with db.read() as s:
        reader = await reader_of(s, principal, thread_id=thread_id)
        fm = await load_family(s, reader.root, coder_id=None if reader.sees_all else principal.id)
        books = [reader.study_codebook] if reader.study_codebook is not None else []
        codes = await codes_for(s, [fm], [reader.owner_id], books)
        root = await s.get(Conversation, reader.root)
        title = root.title if root is not None else reader.root
    return Material(families=[fm], codes=codes), title


async def family_qdpx(db: Database, *, principal: Principal, thread_id: str) -> bytes:
    material, title = await family_material(db, principal=principal, thread_id=thread_id)
    return await asyncio.to_thread(qdpx.qdpx, material, name=title)


async def family_jsonl(
    db: Database, *, principal: Principal, thread_id: str, format: JsonlFormat
) -> bytes:
    material, _ = await family_material(db, principal=principal, thread_id=thread_id)
    writer = tree_jsonl.lines if format == "tree" else preferences.lines
    return await asyncio.to_thread(lambda: b"".join(writer(material)))


async def family_parquet(db: Database, *, principal: Principal, thread_id: str) -> bytes:
    access.permit(principal, Deed.EXPORT)
    async with db.read() as s:
        reader = await reader_of(s, principal, thread_id=thread_id)
    return await parquet_format.parquet(db, [(reader.root, Tag())], study=False)


async def study_material(
    db: Database, *, principal: Principal, study_id: str
) -> tuple[Material, str]:
    """Every participant's family of the study, tagged with participant and condition;
    the codings the caller sees (every coder's for the study's owner, or once
    revealed; else the caller's own)."""
    access.permit(principal, Deed.EXPORT)
    async with db.read() as s:
        reader = await study_reader(s, principal, study_id)
        coder = None if reader.sees_all else principal.id
        families = await load_families(
            s, [(root, Tag(p, c)) for root, p, c in reader.families], coder_id=coder
        )
        books = [reader.codebook] if reader.codebook is not None else []
        codes = await codes_for(s, families, [reader.owner_id], books)
    return Material(families=families, codes=codes), reader.name


async def study_qdpx(db: Database, *, principal: Principal, study_id: str) -> bytes:
    material, name = await study_material(db, principal=principal, study_id=study_id)
    return await asyncio.to_thread(qdpx.qdpx, material, name=name, study=True)


async def study_jsonl(
    db: Database, *, principal: Principal, study_id: str, format: JsonlFormat
) -> bytes:
    material, _ = await study_material(db, principal=principal, study_id=study_id)
    writer = tree_jsonl.lines if format == "tree" else preferences.lines
    return await asyncio.to_thread(lambda: b"".join(writer(material)))


async def study_parquet(db: Database, *, principal: Principal, study_id: str) -> bytes:
    access.permit(principal, Deed.EXPORT)
    async with db.read() as s:
        reader = await study_reader(s, principal, study_id)
    tagged = [(root, Tag(p, c)) for root, p, c in reader.families]
    return await parquet_format.parquet(db, tagged, study=True)
