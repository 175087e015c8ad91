"""Studies exist in token mode only: every test here runs with `HAICO_AUTH=token`."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"auth": "token"}
