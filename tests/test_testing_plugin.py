"""The pytest plugin: registered through its entry point, opt-in fixtures, restored after each test."""

from __future__ import annotations

from importlib.metadata import entry_points

import pytest

from agentool import AgenToolRegistry, get_injector, get_registry, use_registry

pytest_plugins = ('pytester',)

# Inner test modules run by pytester, in this process, with the plugin loaded from its entry point.
ISOLATION = """
from agentool import BaseOperationInput, RoutingConfig, create_agentool, get_registry
from agentool.core.injector import get_injector
from typing import Literal

class EchoInput(BaseOperationInput):
    operation: Literal['echo']
    text: str

def echo(text: str) -> str:
    return text

def make():
    return create_agentool('echo', EchoInput, RoutingConfig(operation_map={'echo': 'echo'}), [echo])

def test_registers(agentool_injector, agentool_registry):
    assert get_registry() is agentool_registry and len(agentool_registry) == 0
    assert get_injector() is agentool_injector and agentool_injector.registry is agentool_registry
    make()
    assert 'echo' in agentool_registry and 'echo' in agentool_injector

def test_starts_empty_again(agentool_injector):
    assert 'echo' not in get_registry() and 'echo' not in agentool_injector
    make()  # no DuplicateNameError: the previous test's agentool is gone
"""

BLOCKING = """
from typing import Any
import pytest
from pydantic_ai import Agent
from pydantic_ai.models import Model, check_allow_model_requests
from agentool.testing import AgentDouble, Output, Script

class RealModel(Model):
    # What a provider model does first in every request.
    async def request(self, messages: Any, model_settings: Any, model_request_parameters: Any) -> Any:
        check_allow_model_requests()
        raise AssertionError('a real request was sent')

    @property
    def model_name(self) -> str:
        return 'real'

    @property
    def system(self) -> str:
        return 'real'

def test_blocked(agentool_no_model_requests):
    agent = Agent(RealModel())
    with pytest.raises(RuntimeError, match='ALLOW_MODEL_REQUESTS is False'):
        agent.run_sync('hi')
    with agent.override(model=AgentDouble(Script(Output('doubled')))):
        assert agent.run_sync('hi').output == 'doubled'
"""

DEFAULTS = """
from pydantic_ai import models
from agentool import get_registry
seen = []

def test_one():
    seen.append(get_registry())
    assert models.ALLOW_MODEL_REQUESTS is False

def test_two():
    seen.append(get_registry())
    assert seen[0] is not seen[1]
"""

PATHS = """
import pytest

@pytest.mark.parametrize('city', ['Paris', 'São Paulo'])
def test_where(agentool_recording_path, request, city):
    assert agentool_recording_path.parent == request.path.parent / 'recordings'
    assert agentool_recording_path.suffix == '.json'
    assert ' ' not in agentool_recording_path.name and '[' not in agentool_recording_path.name
    assert not agentool_recording_path.exists()
"""


def test_the_plugin_is_registered_through_its_entry_point() -> None:
    (entry,) = entry_points(group='pytest11', name='agentool')
    assert entry.value == 'agentool.testing.plugin'


INI = '[pytest]\nasyncio_default_fixture_loop_scope = function\n'


def test_fixtures_isolate_block_and_locate_and_restore_everything(pytester: pytest.Pytester) -> None:
    from pydantic_ai import models

    outer = get_registry()
    pytester.makeini(INI)
    pytester.makepyfile(test_isolation=ISOLATION, test_blocking=BLOCKING, test_paths=PATHS, test_defaults=DEFAULTS)
    reports = pytester.inline_run('-p', 'no:cacheprovider')
    passed, skipped, failed = reports.listoutcomes()
    assert sorted(r.nodeid.split('::')[-1] for r in passed) == [
        'test_blocked',
        'test_registers',
        'test_starts_empty_again',
        'test_where[Paris]',
        'test_where[S\\xe3o Paulo]',  # pytest escapes non-ASCII test ids
    ]
    # Without the ini options nothing is isolated or blocked: the plugin changes no test on its own.
    assert (skipped, sorted(r.nodeid.split('::')[-1] for r in failed)) == ([], ['test_one', 'test_two'])
    assert get_registry() is outer
    assert 'echo' not in outer
    assert models.ALLOW_MODEL_REQUESTS is True


def test_ini_options_apply_isolation_and_blocking_to_every_test(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI + 'agentool_isolate = true\nagentool_block_model_requests = true\n')
    pytester.makepyfile(test_defaults=DEFAULTS)
    pytester.inline_run('-p', 'no:cacheprovider').assertoutcome(passed=2)


def test_the_registry_fixture_brings_a_fresh_injector(agentool_registry: AgenToolRegistry) -> None:
    assert get_registry() is agentool_registry
    inside = get_injector()
    with use_registry():
        assert get_injector() is not inside
    assert get_injector() is inside
