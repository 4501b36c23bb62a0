"""Fixtures every test gets, and the `seam` mark the compatibility matrix selects by.

A fixture more than one test module needs is defined here once (`registry`, `injector`, `tracer`,
`store`, ...); the agentools and helpers they share are plain code in `tests/agentools.py`.

The suite runs on every core (pytest-xdist, `-n auto` in pyproject.toml) in a random order
(pytest-randomly; rerun an order with `--randomly-seed=N`, printed at the top of each run). So a test shares nothing
with another: files under `tmp_path`, ports the OS picks (bind port 0), environment variables
through `monkeypatch`, a registry of its own (the autouse fixture below), never the working
directory. A server a module needs (PostgreSQL, a Temporal or Prefect dev server) is a
module- or session-scoped fixture on a free port in a temporary directory: `--dist loadscope` keeps
a module on one worker, so each worker starts at most its own copy, and workers never meet.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING

import pytest
from hypothesis import settings
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Tracer

from agentool import AgenToolRegistry, use_registry
from agentool.core.injector import AgenToolInjector, use_injector

if TYPE_CHECKING:
    from examples.storage import SQLiteStore

# No hypothesis deadline anywhere: a per-example time limit is a timed assertion, which a loaded 2-core
# machine misses (a markdown example took 422 ms against the default 200 ms, and failed as flaky).
settings.register_profile('agentool', deadline=None)
settings.load_profile('agentool')

SEAM_MODULES = frozenset(
    {
        'test_compat.py',  # the canaries: one per seam, and the supported range
        'test_model_strings.py',  # `Agent('agentool:NAME')` through `infer_model`
        'test_routing.py',  # the model request and its message parts
        'test_output.py',  # tool, native, prompted and text output; output shapes
        'test_toolset.py',  # toolsets, tool definitions, retried returns
        'test_mcp.py',  # the MCP SDK and pydantic-ai's MCP client
        'test_lean.py',  # the direct answer reads pydantic-ai's run and message shapes
        'test_durable_engines.py',  # Temporal and Prefect integrations
        'test_cassette_providers.py',  # the provider model classes (OpenAI, Anthropic)
        'test_cassette_mcp_stdio.py',  # pydantic-ai's MCP client (MCPToolset) recorded and replayed
        'test_testing_trajectory.py',  # run results and message parts read as a trajectory
    }
)
"""Test modules whose every test touches a version-dependent seam of pydantic-ai (`_compat`'s list).

The matrix legs run only these (and tests marked `@pytest.mark.seam` elsewhere, such as tests/test_docs.py's
documented examples run against the installed release): `pytest -m seam`.
"""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.name in SEAM_MODULES:
            item.add_marker(pytest.mark.seam)


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytest's `pytester`, whose inner runs keep the order of the tests a test writes.

    pytest-randomly is installed here, so it would shuffle those too; a test of a plugin asserts
    what happens in the order it wrote (this run's own order stays random).
    """
    monkeypatch.setenv('PYTEST_ADDOPTS', '-p no:randomly')
    return pytester


@pytest.fixture(autouse=True)
def registry() -> Iterator[AgenToolRegistry]:
    """Every test runs against a fresh registry of its own."""
    with use_registry() as fresh:
        yield fresh


@pytest.fixture
def injector() -> Iterator[AgenToolInjector]:
    """A fresh injector in effect for the test, over the test's own registry (`create_agentool` registers into it)."""
    with use_injector() as fresh:
        yield fresh


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    yield exporter
    exporter.clear()


@pytest.fixture
def provider(exporter: InMemorySpanExporter) -> TracerProvider:
    """A tracer provider of this test's own; the global one is never touched in this process."""
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider


@pytest.fixture
def tracer(provider: TracerProvider) -> Tracer:
    """agentool's tracer from this test's own provider."""
    return provider.get_tracer('agentool')


@pytest.fixture
async def store() -> AsyncIterator[SQLiteStore]:
    """The example storage's store on an in-memory SQLite database, closed after the test."""
    from examples.storage import MEMORY, SQLiteStore  # imported here: only the tests that ask load the example

    memory = SQLiteStore(MEMORY)
    yield memory
    await memory.aclose()
