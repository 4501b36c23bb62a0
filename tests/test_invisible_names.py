"""Names must contain a visible character: one made only of invisible ones rendered blank in every listing.

The finding: `'\\u3164'` (Hangul filler), `'\\u2800'` (blank Braille pattern) and a lone combining
mark were accepted as agentool names and listed as nothing.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agentool import Route, RoutingConfig, create_agentool
from agentool.core.injector import AgenToolInjector, use_injector
from agentool.core.registry import AgenToolRegistry, use_registry
from agentool.errors import ConfigurationError
from tests.agentools import PingInput, ping

BLANK = ['\u3164', '\u2800', '\u0301', '\u115f\u1160', ' \uffa0 ', '\u034f', '\U000f0000']


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    with use_registry(AgenToolRegistry()), use_injector(AgenToolInjector()):
        yield


@pytest.mark.parametrize('name', BLANK)
def test_an_agentool_name_that_renders_blank_is_refused(name: str) -> None:
    with pytest.raises(ConfigurationError, match='must contain a visible character') as raised:
        create_agentool(name, PingInput, RoutingConfig(operation_map={'ping': 'ping'}), [ping])
    assert raised.value.details['option'] == 'name'


@pytest.mark.parametrize('name', BLANK)
def test_a_tool_name_that_renders_blank_is_refused(name: str) -> None:
    with pytest.raises(ConfigurationError, match='must contain a visible character'):
        Route(tool=name)


@pytest.mark.parametrize('name', ['ping', 'café', '名前', 'e\u0301t\u00e9', 'x\u3164y', '\u2800a'])
def test_a_name_with_something_to_see_is_accepted(name: str) -> None:
    agent = create_agentool(name, PingInput, RoutingConfig(operation_map={'ping': 'ping'}), [ping])
    assert agent.name == name
