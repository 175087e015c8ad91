"""The in-process memo of rows that never change (`haico.db.memo`): bounded by weight,
least recently used out first, and a value heavier than the whole memo never kept."""

from __future__ import annotations

from haico.db.memo import Memo


def test_the_least_recently_used_goes_first_when_the_weight_is_exceeded() -> None:
    memo: Memo[str] = Memo(10)
    memo.put("a", "A", 4)
    memo.put("b", "B", 4)
    assert memo.get("a") == "A"  # "b" is now the least recently used
    memo.put("c", "C", 4)
    assert (memo.get("a"), memo.get("b"), memo.get("c")) == ("A", None, "C")
    assert len(memo) == 2


def test_a_value_heavier_than_the_memo_is_not_kept_and_a_key_put_again_is_replaced() -> None:
    memo: Memo[str] = Memo(10)
    memo.put("big", "X" * 11, 11)
    assert memo.get("big") is None and len(memo) == 0
    memo.put("a", "A", 6)
    memo.put("a", "A2", 6)  # replaces, does not count twice
    memo.put("b", "B", 4)
    assert (memo.get("a"), memo.get("b")) == ("A2", "B")
    memo.clear()
    assert memo.get("a") is None and len(memo) == 0
