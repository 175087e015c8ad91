"""Agreement between coders over branch-aligned units (docs/analysis.md has the
formulas).

The unit is a node that every listed coder has coded at least once. Per code, each
coder's value on a unit is 1 when they applied that code there (anywhere: the whole
step or any span), else 0. Per code: percent agreement (the mean over pairs of
coders of the share of units they agree on), Cohen's κ (exactly two coders, else
null) and Krippendorff's α (nominal, any number of coders; the `krippendorff`
package). `overall` pools every (unit, code) pair as one unit. A statistic that is
undefined (one value only, so no disagreement is expected) is null; no unit at all
makes every statistic null. Fewer than two coders → 422.

Seeing the agreement is seeing every coder's codings: the owner may, others once
the codings are revealed (`rule.sees_every_coding`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from itertools import combinations

import krippendorff
import numpy as np

from haico.db.engine import Database
from haico.db.repositories import coding as repo
from haico.errors import Forbidden, InvalidInput
from haico.schemas.coding import AgreementOut, CodeAgreement, Statistics
from haico.services.access.principal import Principal
from haico.services.coding.codings import reader_of

MAX_CODERS = 50
# A row per coder, a column per unit, values 0 or 1 (a list of lists, or an array).
Matrix = Sequence[Sequence[int]] | np.ndarray


def _array(m: Matrix) -> np.ndarray:
    return np.asarray(m, dtype=np.int8).reshape(len(m), -1)


def percent_agreement(m: Matrix) -> float | None:
    """The mean over pairs of coders of the share of units on which the pair agrees."""
    a = _array(m)
    coders, units = int(a.shape[0]), int(a.shape[1])
    if units == 0 or coders < 2:
        return None
    pairs = list(combinations(range(coders), 2))
    agree = sum(int((a[i] == a[j]).sum()) for i, j in pairs)
    return agree / (units * len(pairs))


def cohen_kappa(m: Matrix) -> float | None:
    """κ = (p_o − p_e) / (1 − p_e) for exactly two coders; null when p_e = 1."""
    a = _array(m)
    if a.shape[0] != 2 or a.shape[1] == 0:
        return None
    p_o = float((a[0] == a[1]).mean())
    pa, pb = float(a[0].mean()), float(a[1].mean())
    p_e = pa * pb + (1 - pa) * (1 - pb)
    if math.isclose(p_e, 1.0):
        return None
    return (p_o - p_e) / (1 - p_e)


def krippendorff_alpha(m: Matrix) -> float | None:
    """Nominal α over the matrix (the `krippendorff` package); null when only one
    value occurs."""
    a = _array(m)
    if a.size == 0 or a.min() == a.max():
        return None
    value = float(
        krippendorff.alpha(reliability_data=a.astype(float), level_of_measurement="nominal")
    )
    return None if math.isnan(value) else value


def statistics(m: Matrix) -> Statistics:
    return Statistics(
        percent_agreement=percent_agreement(m),
        cohen_kappa=cohen_kappa(m),
        krippendorff_alpha=krippendorff_alpha(m),
    )


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 6)


def compute(
    rows: Iterable[tuple[str, int, str, int, int]],
    coders: list[str],
    names: dict[int, str],
) -> AgreementOut:
    """Agreement among `coders` (names) over codings `(thread, turn, coder, coder id,
    code id)`; `names` names the codes (a code with no name is named by its id).

    The codings become one array, coder × node × code (1: applied), so the units and
    every code's matrix are slices of it."""
    if len(coders) < 2:
        named = ", ".join(coders) if coders else "none"
        raise InvalidInput(
            f"agreement needs at least two coders (listed: {named}); name them with ?coders=a,b"
        )
    index = {c: i for i, c in enumerate(coders)}
    nodes: dict[tuple[str, int], int] = {}
    code_index: dict[int, int] = {}
    who: list[int] = []
    where: list[int] = []
    what: list[int] = []
    for thread_id, turn, coder, _, code_id in rows:
        i = index.get(coder)
        if i is None:
            continue
        who.append(i)
        where.append(nodes.setdefault((thread_id, turn), len(nodes)))
        what.append(code_index.setdefault(code_id, len(code_index)))
    applied = np.zeros((len(coders), len(nodes), len(code_index)), dtype=np.int8)
    if who:
        applied[who, where, what] = 1
    units = applied.any(axis=2).all(axis=0)  # nodes every listed coder coded
    applied = applied[:, units, :]
    # Only codes applied on some unit count (a code seen only off the units has none).
    present = [k for k in range(applied.shape[2]) if applied[:, :, k].any()]
    codes = sorted(present, key=lambda k: list(code_index)[k])
    ids = list(code_index)
    per_code: list[CodeAgreement] = []
    for k in codes:
        st = statistics(applied[:, :, k])
        per_code.append(
            CodeAgreement(
                code_id=ids[k],
                name=names.get(ids[k], str(ids[k])),
                units=int(units.sum()),
                percent_agreement=_round(st.percent_agreement),
                cohen_kappa=_round(st.cohen_kappa),
                krippendorff_alpha=_round(st.krippendorff_alpha),
            )
        )
    pooled = applied[:, :, codes].reshape(len(coders), -1)
    st = statistics(pooled)
    return AgreementOut(
        coders=coders,
        units=int(units.sum()),
        codes=per_code,
        overall=Statistics(
            percent_agreement=_round(st.percent_agreement),
            cohen_kappa=_round(st.cohen_kappa),
            krippendorff_alpha=_round(st.krippendorff_alpha),
        ),
    )


def parse_coders(text: str | None) -> list[str] | None:
    """`a,b` → ["a", "b"] (blanks and repeats dropped); None when not given."""
    if text is None:
        return None
    out = list(dict.fromkeys(c.strip() for c in text.split(",") if c.strip()))
    if len(out) > MAX_CODERS:
        raise InvalidInput(f"at most {MAX_CODERS} coders")
    return out


async def family_agreement(
    db: Database, *, principal: Principal, thread_id: str, coders: list[str] | None
) -> AgreementOut:
    """Agreement over the family's codings among `coders` (default: every coder)."""
    async with db.read() as s:
        reader = await reader_of(s, principal, thread_id=thread_id)
        if not reader.sees_all:
            raise Forbidden("codings are blind until the owner reveals them")
        rows = await repo.agreement_rows(s, [reader.root])
        listed = coders if coders is not None else sorted({r[2] for r in rows})
        code_ids = {r[4] for r in rows}
        names = await repo.code_names(s, code_ids)
    return compute(rows, listed, names)
