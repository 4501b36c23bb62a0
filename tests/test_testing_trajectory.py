"""One assertion vocabulary for any run: a real provider run, its replay, its cassette, its messages, a double."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from unittest.mock import ANY

import pytest
from pydantic_ai import Agent
from pydantic_ai.models import override_allow_model_requests

from agentool.errors import ConfigurationError, ExpectationError
from agentool.testing import AgentDouble, Call, CassetteModel, Output, Script, Trajectory, trajectory

pytest.importorskip('openai')

from tests.provider_mocks import MockServer, Turn

TURNS = [
    Turn(tool='weather', args={'city': 'Paris', 'unit': 'C'}),
    Turn(tool='weather', args={'city': 'Rome', 'unit': 'C'}),
    Turn(text='Paris 21.5 C, Rome 21.5 C.'),
]


def _agent() -> Agent[None, str]:
    agent = Agent(output_type=str, instructions='Answer about the weather.')

    @agent.tool_plain
    def weather(city: str, unit: str) -> str:
        """The weather in a city."""
        return f'21.5 {unit}, sunny in {city}'

    @agent.tool_plain
    def alerts(city: str) -> list[str]:
        """Weather alerts."""
        return []

    return agent


async def _recorded(tmp_path: Path) -> tuple[Any, Any, CassetteModel]:
    path = tmp_path / 'c.json'
    server = MockServer('openai-chat', TURNS)
    live = await _agent().run('Paris and Rome?', model=CassetteModel(server.model(), cassette=path, mode='once'))
    with override_allow_model_requests(False):
        replay_model = CassetteModel(None, cassette=path)
        replayed = await _agent().run('Paris and Rome?', model=replay_model)
    return live, replayed, replay_model


def _check(found: Trajectory) -> None:
    found.assert_called('weather', {'city': 'Paris'})  # a subset of the arguments
    found.assert_called('weather', {'city': ANY, 'unit': 'C'}, times=2)
    found.assert_not_called('alerts')
    found.assert_order(('weather', {'city': 'Paris'}), ('weather', {'city': 'Rome'}))
    found.assert_requests(3)
    found.assert_output('Paris 21.5 C, Rome 21.5 C.')
    assert found.call_count('weather') == 2
    assert found.input_tokens == 33
    assert found.output_tokens == 21


async def test_assertions_work_on_a_real_openai_run_its_replay_and_its_cassette(tmp_path: Path) -> None:
    live, replayed, model = await _recorded(tmp_path)
    for source in (live, live.all_messages(), replayed, model, model.cassette, tmp_path / 'c.json'):
        _check(trajectory(source))
    assert trajectory(live).calls[0].result == '21.5 C, sunny in Paris'
    assert trajectory(model.cassette).calls[1].result == '21.5 C, sunny in Rome'


async def test_cost_is_known_for_a_model_in_the_price_data(tmp_path: Path) -> None:
    live, _replayed, model = await _recorded(tmp_path)
    cost = trajectory(model).cost
    assert cost is not None
    assert cost > 0
    assert trajectory(live).cost == cost


async def test_a_failure_shows_expected_and_actual_side_by_side(tmp_path: Path) -> None:
    live, _replayed, _model = await _recorded(tmp_path)
    with pytest.raises(ExpectationError) as caught:
        trajectory(live).assert_order(('weather', {'city': 'Rome'}), ('weather', {'city': 'Paris'}))
    text = str(caught.value)
    assert re.search(r'expected +\| actual', text)
    assert re.search(r'1\. weather\(\{"city":"Rome"\}\) +\| 1\. weather\(\{"city":"Paris","unit":"C"\}\)', text)
    with pytest.raises(ExpectationError, match=r'made 3 model request\(s\), expected 2'):
        trajectory(live).assert_requests(2)
    with pytest.raises(ExpectationError, match='another output') as caught:
        trajectory(live).assert_output('Sunny.')
    assert caught.value.details['actual'] == repr('Paris 21.5 C, Rome 21.5 C.')


async def test_the_same_assertions_work_on_a_double() -> None:
    double = AgentDouble(Script(Call('weather', {'city': 'Oslo', 'unit': 'C'}), Output('Cold.')))
    await _agent().run('Oslo?', model=double)
    found = trajectory(double)
    found.assert_called('weather', {'city': 'Oslo'})
    found.assert_requests(2)
    found.assert_output('Cold.')
    assert [step.describe() for step in found.steps] == ['1. weather({"city":"Oslo","unit":"C"})', "2. 'Cold.'"]


def test_a_source_that_is_no_run_is_refused() -> None:
    with pytest.raises(ConfigurationError, match='a trajectory comes from'):
        trajectory(42)


async def test_a_streamed_run_reads_through_its_messages(tmp_path: Path) -> None:
    _live, _replayed, model = await _recorded(tmp_path)
    with override_allow_model_requests(False):
        async with _agent().run_stream('Paris and Rome?', model=CassetteModel(None, cassette=model.cassette)) as run:
            await run.get_output()
            found = trajectory(run)
    found.assert_order('weather', 'weather')
    found.assert_output('Paris 21.5 C, Rome 21.5 C.')


async def test_a_double_call_log_compares_a_subset_unless_told_otherwise() -> None:
    double = AgentDouble(Script(Call('weather', {'city': 'Oslo', 'unit': 'C'}), Output('Cold.')))
    await _agent().run('Oslo?', model=double)
    double.calls.assert_called('weather', {'city': 'Oslo'})
    double.calls.assert_order(('weather', {'unit': ANY}))
    with pytest.raises(ExpectationError, match="tool 'weather' was not called with"):
        double.calls.assert_called('weather', {'city': 'Oslo'}, subset=False)
