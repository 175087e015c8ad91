"""Codebooks: a user's named codes (description, colour, parent), changed by adding,
renaming and retiring codes; a code is never deleted, so every coding keeps its code.

A codebook is its owner's (`Deed.CODEBOOK`: a link or a participant has none). A
reader of a family also reads the codebooks its codes may come from (the family
owner's, and a study family's study codebook: `usable_books`): that is how a
commenter, an editor or a study's coder picks a code. Names are
unique within a codebook (compared case-insensitively), so a free-text code of the
notes maps to at most one code. Every change is one transaction: a refused change
(422) writes nothing.
"""

from __future__ import annotations

from collections import Counter

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from haico.db.engine import Database
from haico.db.models import Code, Codebook, User
from haico.db.models_studies import Study
from haico.db.repositories import coding as repo
from haico.db.repositories import studies as studies_repo
from haico.domain import now
from haico.errors import InvalidInput, NotFound
from haico.schemas.coding import (
    MAX_CODES_PER_BOOK,
    CodebookIn,
    CodebookOut,
    CodebookPatch,
    CodeIn,
    CodeOut,
    CodeSuggestion,
)
from haico.services.access import rule as access
from haico.services.access.principal import Principal
from haico.services.access.rule import Deed, Role
from haico.services.families.conversations import get_for

MAX_CODEBOOKS = 100
NO_CODEBOOK = "no such codebook"


def code_out(c: Code) -> CodeOut:
    return CodeOut(
        id=c.id,
        name=c.name,
        description=c.description or "",
        color=c.color,
        parent_id=c.parent_id,
        retired=c.retired,
    )


async def books_out(
    s: AsyncSession, books: list[Codebook], owners: dict[int, str] | None = None
) -> list[CodebookOut]:
    codes = await repo.codes_of(s, [b.id for b in books])
    by_book: dict[int, list[CodeOut]] = {}
    for c in codes:
        by_book.setdefault(c.codebook_id, []).append(code_out(c))
    return [
        CodebookOut(
            id=b.id,
            name=b.name,
            codes=by_book.get(b.id, []),
            owner=(owners or {}).get(b.user_id),
        )
        for b in books
    ]


def _key(name: str) -> str:
    return name.strip().casefold()


def _add(
    book: Codebook, existing: list[Code], adds: list[CodeIn]
) -> list[tuple[Code, Code | None]]:
    """New code rows for `adds` (parents resolved by id or by name), 422 on a name the
    codebook holds already or a parent it does not hold; `existing` grows with them."""
    if len(existing) + len(adds) > MAX_CODES_PER_BOOK:
        raise InvalidInput(f"a codebook holds at most {MAX_CODES_PER_BOOK} codes")
    names = {_key(c.name): c for c in existing}
    ids = {c.id: c for c in existing}
    made: list[tuple[Code, Code | None]] = []
    for add in adds:
        if _key(add.name) in names:
            raise InvalidInput(f"the codebook has a code named {add.name.strip()!r} already")
        parent: Code | None = None
        if isinstance(add.parent, int):
            parent = ids.get(add.parent)
        elif isinstance(add.parent, str):
            parent = names.get(_key(add.parent))
        if add.parent is not None and parent is None:
            raise InvalidInput(f"parent {add.parent!r}: no such code in this codebook")
        code = Code(
            codebook_id=book.id,
            name=add.name.strip(),
            description=add.description or "",
            color=add.color,
            retired=False,
            created_at=now(),
        )
        names[_key(code.name)] = code
        made.append((code, parent))
    existing.extend(c for c, _ in made)
    return made


async def _flush_codes(s: AsyncSession, made: list[tuple[Code, Code | None]]) -> None:
    """Insert new codes in order, each after its parent (a parent may be new too)."""
    for code, parent in made:
        code.parent_id = parent.id if parent is not None else None
        s.add(code)
        await s.flush()


async def create(db: Database, *, principal: Principal, body: CodebookIn) -> CodebookOut:
    access.permit(principal, Deed.CODEBOOK)
    async with db.transaction() as s:
        if len(await repo.codebooks_of(s, [principal.id])) >= MAX_CODEBOOKS:
            raise InvalidInput(f"a user has at most {MAX_CODEBOOKS} codebooks")
        stamp = now()
        book = Codebook(
            user_id=principal.id, name=body.name.strip(), created_at=stamp, updated_at=stamp
        )
        s.add(book)
        await s.flush()
        await _flush_codes(s, _add(book, [], body.codes))
        return (await books_out(s, [book]))[0]


async def _own_book(s: AsyncSession, principal: Principal, codebook_id: int) -> Codebook:
    book = await s.get(Codebook, codebook_id)
    if book is None or book.user_id != principal.id:
        raise NotFound(NO_CODEBOOK)
    return book


async def update(
    db: Database, *, principal: Principal, codebook_id: int, body: CodebookPatch
) -> CodebookOut:
    """Rename the codebook, then add, rename and retire codes, all or nothing."""
    access.permit(principal, Deed.CODEBOOK)
    async with db.transaction() as s:
        book = await _own_book(s, principal, codebook_id)
        codes = await repo.codes_of(s, [book.id])
        by_id = {c.id: c for c in codes}
        if body.name is not None:
            book.name = body.name.strip()
        for r in body.rename:
            code = by_id.get(r.id)
            if code is None:
                raise InvalidInput(f"code {r.id}: no such code in this codebook")
            if any(_key(c.name) == _key(r.name) for c in codes if c.id != r.id):
                raise InvalidInput(f"the codebook has a code named {r.name.strip()!r} already")
            code.name = r.name.strip()
        for code_id in body.retire:
            code = by_id.get(code_id)
            if code is None:
                raise InvalidInput(f"code {code_id}: no such code in this codebook")
            code.retired = True
        await s.flush()
        await _flush_codes(s, _add(book, codes, body.add))
        book.updated_at = now()
        await s.flush()
        return (await books_out(s, [book]))[0]


async def get(
    db: Database, *, principal: Principal, codebook_id: int, thread_id: str | None = None
) -> CodebookOut:
    """The caller's codebook, or (`thread_id`) one usable on that family."""
    async with db.read() as s:
        if thread_id is not None:
            for book in await usable_books(s, principal, thread_id=thread_id):
                if book.id == codebook_id:
                    return (await books_out(s, [book], await _owner_names(s, [book])))[0]
            raise NotFound(NO_CODEBOOK)
        access.permit(principal, Deed.CODEBOOK)
        book = await _own_book(s, principal, codebook_id)
        return (await books_out(s, [book]))[0]


async def list_for(
    db: Database, *, principal: Principal, thread_id: str | None = None
) -> list[CodebookOut]:
    """The caller's codebooks, or (`thread_id`) the codebooks whose codes that
    family's codings may use (the caller must read the family)."""
    async with db.read() as s:
        if thread_id is not None:
            books = await usable_books(s, principal, thread_id=thread_id)
            return await books_out(s, books, await _owner_names(s, books))
        access.permit(principal, Deed.CODEBOOK)
        return await books_out(s, await repo.codebooks_of(s, [principal.id]))


async def _owner_names(s: AsyncSession, books: list[Codebook]) -> dict[int, str]:
    ids = {b.user_id for b in books}
    rows = await s.execute(select(User.id, User.name).where(User.id.in_(ids)))
    return {r.id: r.name for r in rows}


async def usable_books(s: AsyncSession, principal: Principal, *, thread_id: str) -> list[Codebook]:
    """The codebooks a family's codings draw on: its owner's, and its study's."""
    conv, _ = await get_for(s, principal, thread_id=thread_id, need=Role.VIEWER)
    books = await repo.codebooks_of(s, [conv.user_id])
    study = await studies_repo.study_of_family(s, conv.root_thread_id)
    book_id = study_codebook(study[0]) if study is not None else None
    if book_id is not None and all(b.id != book_id for b in books):
        book = await s.get(Codebook, book_id)
        if book is not None:
            books.append(book)
    return books


def study_codebook(study: Study) -> int | None:
    """The study's codebook id (the study stores it as text), if it names one."""
    raw = study.codebook_id
    return int(raw) if raw is not None and raw.isdigit() else None


async def suggestions(db: Database, *, principal: Principal) -> list[CodeSuggestion]:
    """The free-text codes of the caller's notes that no codebook of theirs holds yet
    (compared case-insensitively), most used first: codes to add."""
    access.permit(principal, Deed.CODEBOOK)
    async with db.read() as s:
        books = await repo.codebooks_of(s, [principal.id])
        held = {_key(c.name) for c in await repo.codes_of(s, [b.id for b in books])}
        lists = await repo.user_note_codes(s, principal.id)
    counts = Counter(code for codes in lists for code in codes if _key(code) not in held)
    return [
        CodeSuggestion(code=c, count=n)
        for c, n in sorted(counts.items(), key=lambda x: (-x[1], x[0]))
    ]
