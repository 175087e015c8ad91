"""FastAPI's field validators, built once per test process rather than once per app.

FastAPI builds a route's parameter and response validators (a pydantic `TypeAdapter`
per field) for each app, on the first request routed there. The server makes one app;
the suite makes one a test, so each test paid again for every route it called: about
a tenth of a route-walking test's time (tests/access/test_rule_walk.py, SQLite half:
66 s against 57 s, run side by side). A validator holds no state of its app, so the
same field (its annotation and the classes in it, its constraints, its config) is
given the one already built.
"""

from __future__ import annotations

import typing
from typing import Any


def share_field_validators() -> None:
    """From now on, a field described as one built before gets that one's validator.
    Without the FastAPI internals this relies on, nothing changes (each app builds its
    own, as before)."""
    try:
        from fastapi._compat import v2
    except ImportError:  # pragma: no cover - another FastAPI
        return
    field_class = getattr(v2, "ModelField", None)
    build = getattr(field_class, "__post_init__", None)
    as_dict = getattr(v2, "asdict", None)
    if field_class is None or build is None or as_dict is None:  # pragma: no cover
        return
    built: dict[tuple[str, str, tuple[int, ...]], tuple[Any, dict[str, Any]]] = {}

    def classes_in(annotation: Any, found: list[type]) -> list[type]:
        if isinstance(annotation, type):
            found.append(annotation)
        for arg in typing.get_args(annotation):
            classes_in(arg, found)
        return found

    def shared_build(field: Any) -> None:
        described = as_dict(field.field_info)
        # Two classes of one name (made in a function) are told apart by identity;
        # what the key names is kept alive with the validator, so no address is reused.
        classes = classes_in(described["annotation"], [])
        key = (repr(described), repr(field.config), tuple(map(id, classes)))
        if key in built:
            field._type_adapter = built[key][0]
            return
        build(field)
        built[key] = (field._type_adapter, described)

    field_class.__post_init__ = shared_build
