"""Coding benchmark: a study's agreement and its REFI-QDA export, on PostgreSQL.

Run from the repository root: `.venv/bin/python -m bench.coding`.

Data, written straight into the tables: a study of 60 participants, each with a
family of 40 steps (a user message of ~200 characters and a reply of ~600), a
codebook of 10 codes, and 3 coders who each apply 5 codings to every step (half of
them spans, half whole steps): 60 × 40 × 3 × 5 = 36,000 codings.

Measured:
- Agreement: `study_side.study_agreement` over the whole study (every coder,
  10 codes, 2,400 units), median of REPEAT runs after a warm-up. Baseline, same
  run: the same statistics read family by family (60 reads) and computed in pure
  Python (no krippendorff/numpy).
- The study's `.qdpx`: `exports.study_qdpx` in a child process (so its peak RSS is
  its own), after a warm-up export of a one-participant study: wall time and peak
  RSS growth; then `project.qde` validated against the vendored REFI-QDA schema.

Targets: agreement <= 500 ms; `.qdpx` <= 5 s, <= 100 MB RSS growth, valid.
"""

from __future__ import annotations

import asyncio
import io
import json
import random
import resource
import subprocess
import sys
import time
import uuid
import zipfile
from collections.abc import Sequence
from typing import Any

from lxml import etree
from sqlalchemy import insert

from bench.common import median, print_table, random_text, report, temp_settings
from haico.config import Settings
from haico.db.engine import Database
from haico.db.models import (
    Code,
    Codebook,
    Coding,
    Conversation,
    User,
    WorkspaceSnapshot,
)
from haico.db.models_studies import Study, StudyCondition, StudyMember, StudyParticipant
from haico.db.repositories import coding as coding_repo
from haico.domain import NodeState, new_thread_id, now
from haico.services.access.principal import Principal
from haico.services.coding.study_side import study_agreement
from haico.services.datasets import exports, qdpx

PARTICIPANTS, STEPS, CODERS, PER_STEP, CODES = 60, 40, 3, 5, 10
REPEAT = 5
MAX_AGREEMENT_MS = 500.0
MAX_QDPX_S = 5.0
MAX_RSS_MB = 100.0


async def _study(db: Database, owner: int, participants: int, tag: str) -> tuple[str, list[int]]:
    """A study of `participants` families, each fully coded; its id and code ids."""
    rnd = random.Random(7)
    async with db.transaction() as s:
        book = Codebook(user_id=owner, name=f"book {tag}", created_at=now(), updated_at=now())
        s.add(book)
        await s.flush()
        codes = [Code(codebook_id=book.id, name=f"code {i}", description="") for i in range(CODES)]
        s.add_all(codes)
        await s.flush()
        code_ids = [c.id for c in codes]
        study_id = f"st_{uuid.uuid4().hex[:12]}"
        cond_ids = [f"sc_{uuid.uuid4().hex[:12]}" for _ in range(2)]
        s.add(
            Study(
                id=study_id,
                owner_id=owner,
                name=f"bench {tag}",
                task={},
                codebook_id=str(book.id),
                join_token=f"st_{uuid.uuid4().hex}",
            )
        )
        await s.flush()
        for i, cid in enumerate(cond_ids):
            s.add(
                StudyCondition(id=cid, study_id=study_id, position=i, name=f"cond {i}", features={})
            )
        coders = [User(name=f"coder-{tag}-{i}") for i in range(CODERS)]
        s.add_all(coders)
        await s.flush()
        for c in coders:
            s.add(StudyMember(study_id=study_id, user_id=c.id, role="coder"))
        await s.flush()
    for p in range(participants):
        async with db.transaction() as s:
            user = User(name=f"participant-{tag}-{p}")
            s.add(user)
            await s.flush()
            tid = new_thread_id()
            s.add(
                Conversation(
                    thread_id=tid,
                    user_id=user.id,
                    root_thread_id=tid,
                    title=f"P{p + 1:03d}",
                    turn_index=STEPS,
                    created_at=now(),
                    updated_at=now(),
                )
            )
            await s.flush()
            s.add(
                StudyParticipant(
                    id=f"sp_{uuid.uuid4().hex[:12]}",
                    study_id=study_id,
                    number=p + 1,
                    condition_id=cond_ids[p % 2],
                    user_id=user.id,
                    thread_id=tid,
                    token_hash=uuid.uuid4().hex,
                )
            )
            snaps, rows = [], []
            for k in range(1, STEPS + 1):
                user_message, reply = random_text(200), random_text(600)
                snaps.append(
                    {
                        "thread_id": tid,
                        "turn_index": k,
                        "format": 3,
                        "preferences": [],
                        "todos": [],
                        "rejected": [],
                        "user_message": user_message,
                        "reply": reply,
                        "state": NodeState.COMPLETE.value,
                        "captured_at": now(),
                        "completed_at": now(),
                    }
                )
                for coder in coders:
                    for n in range(PER_STEP):
                        span = n % 2 == 1
                        start = rnd.randrange(0, 500)
                        rows.append(
                            {
                                "user_id": coder.id,
                                "root_thread_id": tid,
                                "thread_id": tid,
                                "turn_index": k,
                                "code_id": rnd.choice(code_ids),
                                "field": "reply" if span else None,
                                "span_start": start if span else None,
                                "span_end": start + 40 if span else None,
                                "memo": "why" if n == 0 else "",
                                "coder": coder.name,
                                "created_at": now(),
                            }
                        )
            await s.execute(insert(WorkspaceSnapshot), snaps)
            await s.execute(insert(Coding), rows)
    return study_id, code_ids


async def build(settings: Settings) -> dict[str, Any]:
    db = Database(settings.sql_url)
    try:
        async with db.transaction() as s:
            owner = User(name="bench-owner")
            s.add(owner)
            await s.flush()
            owner_id = owner.id
        big, _ = await _study(db, owner_id, PARTICIPANTS, "big")
        small, _ = await _study(db, owner_id, 1, "small")
        return {"big": big, "small": small, "owner": owner_id}
    finally:
        await db.dispose()


# ---- agreement ----


def _naive_stats(m: Sequence[Sequence[int]]) -> tuple[float | None, float | None]:
    """Percent agreement and nominal α in pure Python (the coincidence matrix)."""
    units = len(m[0])
    if units == 0:
        return None, None
    pairs = [(i, j) for i in range(len(m)) for j in range(i + 1, len(m))]
    pa = sum(sum(1 for u in range(units) if m[i][u] == m[j][u]) for i, j in pairs) / (
        units * len(pairs)
    )
    o = {(a, b): 0.0 for a in (0, 1) for b in (0, 1)}
    for u in range(units):
        values = [row[u] for row in m]
        for x in range(len(values)):
            for y in range(len(values)):
                if x != y:
                    o[(values[x], values[y])] += 1 / (len(values) - 1)
    n1 = o[(1, 1)] + o[(1, 0)]
    n0 = o[(0, 0)] + o[(0, 1)]
    n = n0 + n1
    if n0 == 0 or n1 == 0:
        return pa, None
    return pa, 1 - ((o[(0, 1)] + o[(1, 0)]) / n) / (2 * n0 * n1 / (n * (n - 1)))


async def _naive_agreement(db: Database, study: str) -> None:
    async with db.read() as s:
        from haico.db.repositories import studies as studies_repo

        families = await studies_repo.participants_of(s, study)
        rows = []
        for p, _ in families:
            rows += await coding_repo.agreement_rows(s, [p.thread_id])
    coders = sorted({r[2] for r in rows})
    applied: dict[tuple[str, int], dict[str, set[int]]] = {}
    for t, k, coder, _, code in rows:
        applied.setdefault((t, k), {}).setdefault(coder, set()).add(code)
    units = [u for u, by in applied.items() if len(by) == len(coders)]
    for code in {r[4] for r in rows}:
        m = [[1 if code in applied[u][c] else 0 for u in units] for c in coders]
        _naive_stats(m)


async def _agreement(settings: Settings, ids: dict[str, Any]) -> tuple[float, float, int]:
    db = Database(settings.sql_url)
    owner = Principal(int(ids["owner"]), "bench-owner")
    try:
        samples = []
        units = 0
        for n in range(REPEAT + 1):
            start = time.perf_counter()
            out = await study_agreement(db, principal=owner, study_id=ids["big"], coders=None)
            if n:
                samples.append((time.perf_counter() - start) * 1000)
            units = out.units
        start = time.perf_counter()
        await _naive_agreement(db, ids["big"])
        naive = (time.perf_counter() - start) * 1000
    finally:
        await db.dispose()
    return median(samples), naive, units


# ---- the study's .qdpx, in a child process ----


async def _child(url: str, owner: int, big: str, small: str) -> dict[str, Any]:
    settings = Settings(database_url=url, secret_key="bench")
    db = Database(settings.sql_url)
    principal = Principal(owner, "bench-owner")
    try:
        await exports.study_qdpx(db, principal=principal, study_id=small)  # warm
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        start = time.perf_counter()
        body = await exports.study_qdpx(db, principal=principal, study_id=big)
        elapsed = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        with zipfile.ZipFile(io.BytesIO(body)) as z:
            doc = etree.fromstring(z.read("project.qde"))
        valid = qdpx.schema().validate(doc)
        selections = len(doc.findall(f".//{{{qdpx.NS}}}PlainTextSelection"))
        return {
            "seconds": elapsed,
            "rss_growth_mb": (after - before) / 1024,
            "bytes": len(body),
            "valid": bool(valid),
            "selections": selections,
        }
    finally:
        await db.dispose()


def _qdpx_in_child(url: str, ids: dict[str, Any]) -> dict[str, Any]:
    args = [sys.executable, "-m", "bench.coding", "--child", url, str(ids["owner"])]
    args += [ids["big"], ids["small"]]
    done = subprocess.run(args, capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


async def run() -> int:
    async with temp_settings("postgres") as settings:
        ids = await build(settings)
        agreement_ms, naive_ms, units = await _agreement(settings, ids)
        q = await asyncio.to_thread(_qdpx_in_child, settings.database_url or "", ids)
    codings = PARTICIPANTS * STEPS * CODERS * PER_STEP
    rows = [
        {
            "what": f"study agreement, {codings:,} codings, {units:,} units",
            "ours": f"{agreement_ms:.0f} ms",
            "baseline": f"{naive_ms:.0f} ms (per-family reads, pure Python)",
        },
        {
            "what": f"study .qdpx, {q['selections']:,} selections",
            "ours": f"{q['seconds']:.2f} s, +{q['rss_growth_mb']:.1f} MB",
            "baseline": "-",
        },
    ]
    print(f"\nCoding on PostgreSQL ({REPEAT} agreement runs after a warm-up)")
    print_table(rows, [("what", "what"), ("ours", "ours"), ("baseline", "baseline")])
    figures = [
        {
            "figure": f"a study's agreement ({PARTICIPANTS} families x {STEPS} steps x "
            f"{CODERS} coders x {PER_STEP} codings)",
            "target": f"<= {MAX_AGREEMENT_MS:.0f} ms",
            "measured": f"{agreement_ms:.0f} ms",
            "baseline": f"{naive_ms:.0f} ms, per-family reads and pure Python",
            "ok": agreement_ms <= MAX_AGREEMENT_MS,
        },
        {
            "figure": "that study's .qdpx",
            "target": f"<= {MAX_QDPX_S:.0f} s",
            "measured": f"{q['seconds']:.2f} s ({q['bytes'] / 1e6:.1f} MB zipped)",
            "baseline": "-",
            "ok": q["seconds"] <= MAX_QDPX_S,
        },
        {
            "figure": "that study's .qdpx, peak RSS growth",
            "target": f"<= {MAX_RSS_MB:.0f} MB",
            "measured": f"{q['rss_growth_mb']:.1f} MB",
            "baseline": "-",
            "ok": q["rss_growth_mb"] <= MAX_RSS_MB,
        },
    ]
    return report(
        "coding",
        {
            f"agreement <= {MAX_AGREEMENT_MS:.0f} ms": agreement_ms <= MAX_AGREEMENT_MS,
            f".qdpx <= {MAX_QDPX_S:.0f} s": q["seconds"] <= MAX_QDPX_S,
            f".qdpx RSS growth <= {MAX_RSS_MB:.0f} MB": q["rss_growth_mb"] <= MAX_RSS_MB,
            ".qdpx valid against the REFI-QDA schema": q["valid"],
        },
        figures=figures,
        agreement_ms=agreement_ms,
        qdpx_s=q["seconds"],
        qdpx_rss_mb=q["rss_growth_mb"],
    )


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        url, owner, big, small = sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
        print(json.dumps(asyncio.run(_child(url, owner, big, small))))
        return
    sys.exit(asyncio.run(run()))


if __name__ == "__main__":
    main()
