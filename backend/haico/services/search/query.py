"""What a search query means, as pure functions: its terms, whether a text matches
them, and the snippet shown for a match.

A query is words and "quoted phrases". A text matches when it holds every term as
whole words, case aside: `variant 2` finds "the 2nd… variant 2" but not "Section 12
variants" ("12" is not the word "2", "variants" not the word "variant"). A phrase's
words must follow each other, whatever spaces or punctuation lie between them. A
leading `-` excludes a term (as PostgreSQL's web search syntax does); a bare `or` is
not a term.
"""

from __future__ import annotations

import re

SNIPPET_CHARS = 200

_TERM = re.compile(r'"([^"]*)"|(\S+)')


def _split(query: str) -> tuple[list[list[str]], list[list[str]]]:
    wanted: list[list[str]] = []
    unwanted: list[list[str]] = []
    for phrase, word in _TERM.findall(query):
        target = wanted
        if phrase:
            words = [w.lower() for w in re.findall(r"\w+", phrase)]
        else:
            if word.startswith("-"):
                target = unwanted
            raw = word.lstrip("-")
            # "co-construction" is one term: its parts, in order
            words = [] if raw.lower() == "or" else [w.lower() for w in re.findall(r"\w+", raw)]
        if words:
            target.append(words)
    return wanted, unwanted


def terms_of(query: str) -> list[list[str]]:
    """The query's terms, each a list of lowered words (a phrase has several)."""
    return _split(query)[0]


def excluded_of(query: str) -> list[list[str]]:
    """The terms a `-` excludes: a text that holds one does not match."""
    return _split(query)[1]


def matches(text: str, terms: list[list[str]], excluded: list[list[str]]) -> bool:
    """Every term in `text` as whole words, and no excluded one."""
    if first_match(text, terms) is None:
        return False
    return not any(_pattern(t).search(text) for t in excluded)


def _pattern(term: list[str]) -> re.Pattern[str]:
    body = r"\W+".join(re.escape(w) for w in term)
    return re.compile(rf"(?<!\w){body}(?!\w)", re.IGNORECASE)


def first_match(text: str, terms: list[list[str]]) -> tuple[int, int] | None:
    """Where the earliest term match starts and ends, if `text` holds every term;
    None otherwise."""
    spans: list[tuple[int, int]] = []
    for term in terms:
        found = _pattern(term).search(text)
        if found is None:
            return None
        spans.append(found.span())
    return min(spans) if spans else None


def snippet(text: str, terms: list[list[str]]) -> str:
    """About `SNIPPET_CHARS` characters of `text` on one line, centred on the first
    match (the start of the text when nothing matches)."""
    flat = re.sub(r"\s+", " ", text).strip()
    span = first_match(flat, terms) or _any_term(flat, terms)
    if span is None:
        start = 0
    else:
        centre = (span[0] + span[1]) // 2
        start = max(0, min(centre - SNIPPET_CHARS // 2, len(flat) - SNIPPET_CHARS))
        if start > 0:  # begin at a word
            space = flat.find(" ", start)
            start = space + 1 if 0 <= space < span[0] else start
    end = start + SNIPPET_CHARS
    return ("…" if start > 0 else "") + flat[start:end].strip() + ("…" if end < len(flat) else "")


def _any_term(text: str, terms: list[list[str]]) -> tuple[int, int] | None:
    for term in terms:
        found = _pattern(term).search(text)
        if found is not None:
            return found.span()
    return None
