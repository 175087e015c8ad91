"""A condition's features: the stored JSON, the wire shape and a participant's session
read the same four switches, each on unless the owner turned it off. The check itself
(`access.principal.require`) sits with the principal, so every service can ask it."""

from __future__ import annotations

from typing import Any

from haico.schemas.studies import Features
from haico.services.access.principal import Feature


def stored(features: Features) -> dict[str, bool]:
    return features.model_dump()


def wire(raw: dict[str, Any] | None) -> Features:
    """The stored switches as the wire shows them; a missing one is on."""
    raw = raw or {}
    return Features(**{f.value: raw.get(f.value, True) is not False for f in Feature})


def turned_on(raw: dict[str, Any] | None) -> frozenset[Feature]:
    on = wire(raw).model_dump()
    return frozenset(f for f in Feature if on[f.value])


def label(number: int) -> str:
    """A participant's pseudonym: its place in join order, `P001`, `P002`, …"""
    return f"P{number:03d}"
