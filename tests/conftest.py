from __future__ import annotations

from collections.abc import Iterator

import pytest

from agentool import AgenToolRegistry, use_registry


@pytest.fixture(autouse=True)
def registry() -> Iterator[AgenToolRegistry]:
    """Every test runs against a fresh registry of its own."""
    with use_registry() as fresh:
        yield fresh
