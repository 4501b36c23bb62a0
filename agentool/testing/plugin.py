"""The pytest plugin of `agentool.testing`, loaded through the `pytest11` entry point.

Everything is opt-in, so installing agentool changes no other project's tests:

- `agentool_registry`: a fresh registry in effect for the test (and so a fresh default injector).
- `agentool_injector`: a fresh injector in effect for the test, bound to a fresh registry.
- `agentool_no_model_requests`: pydantic-ai's `ALLOW_MODEL_REQUESTS` is false for the test, so a
  real model that slips past a double fails instead of spending tokens. Doubles and agentool's
  own models still answer.
- `agentool_recording_path`: `recordings/<test name>.json` next to the test module.

Each is restored when the test ends. The ini options `agentool_isolate = true` and
`agentool_block_model_requests = true` apply the first and third to every test.

agentool itself is imported only when a fixture runs, so a broken import shows up in the tests
that use agentool rather than at pytest's start.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from ..core.injector import AgenToolInjector
    from ..core.registry import AgenToolRegistry

__all__ = (
    'pytest_addoption',
    'agentool_registry',
    'agentool_injector',
    'agentool_no_model_requests',
    'agentool_recording_path',
)

_ISOLATE = 'agentool_isolate'
_BLOCK = 'agentool_block_model_requests'


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(_ISOLATE, type='bool', default=False, help='agentool: a fresh registry and injector for every test')
    parser.addini(_BLOCK, type='bool', default=False, help='agentool: ALLOW_MODEL_REQUESTS = False for every test')


@pytest.fixture
def agentool_registry() -> Iterator[AgenToolRegistry]:
    """A fresh, empty registry in effect for the test; the previous one is back afterwards."""
    from ..core.registry import use_registry

    with use_registry() as registry:
        yield registry


@pytest.fixture
def agentool_injector(agentool_registry: AgenToolRegistry) -> Iterator[AgenToolInjector]:
    """A fresh injector in effect for the test, bound to the test's fresh registry."""
    from ..core.injector import AgenToolInjector, use_injector

    with use_injector(AgenToolInjector(registry=agentool_registry)) as injector:
        yield injector


@pytest.fixture
def agentool_no_model_requests() -> Iterator[None]:
    """`pydantic_ai.models.ALLOW_MODEL_REQUESTS` is false during the test."""
    from pydantic_ai.models import override_allow_model_requests

    with override_allow_model_requests(False):
        yield


@pytest.fixture
def agentool_recording_path(request: pytest.FixtureRequest) -> Path:
    """Where this test's recording lives: `recordings/<test name>.json` beside the test module."""
    name = re.sub(r'[^\w.-]+', '_', request.node.name).strip('_') or 'recording'
    return request.path.parent / 'recordings' / f'{name}.json'


@pytest.fixture(autouse=True)
def _agentool_defaults(request: pytest.FixtureRequest) -> None:
    # A no-op unless the project turned the ini options on.
    if request.config.getini(_ISOLATE):
        request.getfixturevalue('agentool_injector')
    if request.config.getini(_BLOCK):
        request.getfixturevalue('agentool_no_model_requests')
