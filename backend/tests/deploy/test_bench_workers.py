"""`bench.workers`' verdict: two workers must reach 85% of the bound the machine
allows, each round's ratio against its own round's bound (not a fixed 1.6x, which
2 shared cores cannot reach: their bound is 1.49-1.57x)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
try:
    from bench.workers import MIN_SHARE_OF_BOUND, judge, share_of_bound
finally:
    sys.path.remove(str(ROOT))


def _round(ratio: float, bound: float) -> dict[str, float]:
    return {"ratio": ratio, "bound": bound, "one": 30.0, "two": 30.0 * ratio}


def test_two_workers_pass_at_85_percent_of_their_own_rounds_bound() -> None:
    assert MIN_SHARE_OF_BOUND == 0.85
    # 1.33x against a bound of 1.56x (85.3%) passes, though far below 1.6x
    assert judge([_round(1.33, 1.56)]).ok
    # 1.30x against 1.55x (83.9%) does not
    assert not judge([_round(1.30, 1.55)]).ok
    # a higher bound asks for more: 1.5x against 1.9x (78.9%) fails
    assert not judge([_round(1.5, 1.9)]).ok


def test_the_verdict_is_the_median_share_over_the_rounds() -> None:
    rounds = [
        _round(1.14, 1.55),  # 74%
        _round(1.59, 1.57),  # 101%
        _round(1.36, 1.53),  # 89%
        _round(1.03, 1.56),  # 66%
        _round(1.40, 1.55),  # 90%
    ]
    verdict = judge(rounds)
    assert verdict.round is rounds[2] and verdict.ok
    assert math.isclose(verdict.share, 1.36 / 1.53)
    # the median by share (74%, 87%, 80%: the 80% round), not by ratio (the 1.30x
    # round, 87% of its bound, which would pass)
    skewed = [_round(1.40, 1.9), _round(1.30, 1.50), _round(1.20, 1.50)]
    assert judge(skewed).round is skewed[2] and not judge(skewed).ok


def test_a_round_without_a_bound_counts_as_nothing() -> None:
    assert share_of_bound(_round(1.5, float("nan"))) == 0.0
    assert share_of_bound(_round(1.5, 0.0)) == 0.0
    assert not judge([_round(1.5, float("nan"))]).ok
