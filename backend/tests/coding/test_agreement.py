"""Agreement: κ and α checked against a computation by hand, the unit (a node every
listed coder coded), per code and pooled, null when undefined, 422 under two coders,
and blind until revealed; through the REST API on both databases."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from haico.errors import InvalidInput
from haico.services.coding import agreement
from tests.coding.helpers import API, code, family, ok

# Two coders, four units, one code (1 = applied):
#   A: 1 0 1 0
#   B: 1 1 1 0
# Percent agreement: they agree on units 1, 3, 4 → 3/4 = 0.75.
# Cohen's κ: p_o = 0.75; A applies it on 2/4 = 0.5, B on 3/4 = 0.75;
#   p_e = 0.5·0.75 + 0.5·0.25 = 0.5; κ = (0.75 − 0.5) / (1 − 0.5) = 0.5.
# Krippendorff's α (nominal): the coincidences over the 8 values are
#   o(1,1) = 4 (units 1 and 3), o(0,0) = 2 (unit 4), o(0,1) = o(1,0) = 1 (unit 2);
#   n₁ = 5, n₀ = 3, n = 8. D_o = (o(0,1) + o(1,0)) / n = 2/8 = 0.25;
#   D_e = 2·n₀·n₁ / (n(n − 1)) = 30/56; α = 1 − D_o/D_e = 1 − 0.25·56/30 = 0.5333…
A = [1, 0, 1, 0]
B = [1, 1, 1, 0]


def test_kappa_and_alpha_match_the_hand_computation() -> None:
    assert agreement.percent_agreement([A, B]) == 0.75
    assert agreement.cohen_kappa([A, B]) == pytest.approx(0.5)
    assert agreement.krippendorff_alpha([A, B]) == pytest.approx(1 - 0.25 * 56 / 30)
    # three coders: κ is for two only; α takes any number; agreement is pairwise
    c = [1, 0, 1, 1]
    assert agreement.cohen_kappa([A, B, c]) is None
    assert agreement.krippendorff_alpha([A, B, c]) is not None
    assert agreement.percent_agreement([A, B, c]) == pytest.approx((3 + 3 + 2) / 12)


def test_undefined_statistics_are_null_and_one_coder_is_refused() -> None:
    same = [[1, 1, 1], [1, 1, 1]]
    assert agreement.percent_agreement(same) == 1.0
    assert agreement.cohen_kappa(same) is None and agreement.krippendorff_alpha(same) is None
    with pytest.raises(InvalidInput):
        agreement.compute([], ["a"], {})


def test_the_unit_is_a_node_every_listed_coder_coded() -> None:
    P, Q = 1, 2  # codes
    rows = [
        # node 1: both coded, both P → agree on P (and on not-Q)
        ("t", 1, "a", 1, P),
        ("t", 1, "b", 2, P),
        # node 2: a codes P, b codes Q → disagree on both codes
        ("t", 2, "a", 1, P),
        ("t", 2, "b", 2, Q),
        # node 3: only a coded it → not a unit
        ("t", 3, "a", 1, Q),
        # a coder not listed is ignored
        ("t", 3, "c", 3, P),
    ]
    out = agreement.compute(rows, ["a", "b"], {P: "p", Q: "q"})
    assert out.units == 2
    per = {c.name: c for c in out.codes}
    assert per["p"].percent_agreement == 0.5 and per["q"].percent_agreement == 0.5
    # p: a = [1, 1], b = [1, 0]; p_e = 1·0.5 + 0·0.5 = 0.5, p_o = 0.5 → κ = 0
    assert per["p"].cohen_kappa == 0.0
    # pooled over (node, code): a = [1, 1, 0, 0], b = [1, 0, 0, 1] → 2/4 agree
    assert out.overall.percent_agreement == 0.5


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"auth": "token"}


async def test_family_agreement_over_the_wire(app: FastAPI, client: httpx.AsyncClient) -> None:
    s = await family(app, client, coders=("commenter", "commenter"))
    (a, ah), (b, bh) = s.coders["commenter0"], s.coders["commenter1"]
    p = s.code("planning")
    d = s.code("delegation")
    # the hand example on code `planning` over four nodes (1, 2, 3 and the sibling);
    # `delegation` marks each node as coded where a coder's value is 0
    nodes = [(s.tid, 1), (s.tid, 2), (s.tid, 3), (s.sibling_tid, 2)]
    for (tid, k), va, vb in zip(nodes, A, B, strict=True):
        await code(client, tid, k, p if va else d, ah)
        await code(client, tid, k, p if vb else d, bh)
    url = f"{API}/{s.tid}/agreement"
    # blind: a coder cannot see it yet; the owner can
    assert (await client.get(url, headers=ah)).status_code == 403
    out = await ok(
        await client.get(url, params={"coders": f"{a.name},{b.name}"}, headers=s.owner_h)
    )
    assert out["coders"] == [a.name, b.name] and out["units"] == 4
    per = {c["name"]: c for c in out["codes"]}
    assert per["planning"]["units"] == 4
    assert per["planning"]["percent_agreement"] == 0.75
    assert per["planning"]["cohen_kappa"] == pytest.approx(0.5)
    assert per["planning"]["krippendorff_alpha"] == pytest.approx(0.533333, abs=1e-6)
    # delegation is the complement here: the same figures
    assert per["delegation"]["cohen_kappa"] == pytest.approx(0.5)
    assert out["overall"]["percent_agreement"] == 0.75
    await ok(await client.patch(f"{API}/{s.tid}", json={"reveal_codings": True}, headers=s.owner_h))
    assert (await ok(await client.get(url, headers=ah)))["units"] == 4  # default: every coder
    r = await client.get(url, params={"coders": a.name}, headers=ah)
    assert r.status_code == 422
    assert f"listed: {a.name}" in r.json()["message"]  # who was listed, and how to list more
    assert "?coders=" in r.json()["message"]
    # a coder with no codings leaves no unit: every statistic null
    out = await ok(await client.get(url, params={"coders": f"{a.name},nobody"}, headers=ah))
    assert out["units"] == 0 and out["codes"] == []
    assert out["overall"] == {
        "percent_agreement": None,
        "cohen_kappa": None,
        "krippendorff_alpha": None,
    }
