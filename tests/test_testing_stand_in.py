"""Doubles reached by name through the injector: `use_doubles` and `DoubledAgent`."""

from __future__ import annotations

import asyncio
from types import NoneType
from typing import Any, Literal

import pytest
from pydantic import BaseModel
from pydantic_ai import Agent, ImageUrl
from pydantic_ai.models import override_allow_model_requests

from agentool import BaseOperationInput, RoutingConfig, create_agentool
from agentool.core.injector import AgenToolInjector, get_injector
from agentool.errors import AgenToolNotFoundError, ConfigurationError, DriftError, InvalidInputError
from agentool.testing import AgentDouble, Call, DoubledAgent, Operation, Output, OutputFrom, Script, use_doubles
from examples.calculator import create_calculator
from tests.agentools import Advice, advisor


class Forecast(BaseModel):
    summary: str
    temp_c: float


class TripInput(BaseOperationInput):
    operation: Literal['plan']
    city: str


async def plan(city: str) -> str:
    """Plan a trip: asks the `weather` agent by name, through the injector."""
    forecast = (await get_injector().run('weather', f'Weather in {city}?')).output
    return f'{city}: pack for {forecast.summary}'


def register_agents(injector: AgenToolInjector) -> Agent[None, Any]:
    """A `weather` LLM agent (never reached for real here) and a `trip` agentool that delegates to it."""
    # `deps_type=NoneType`: the injector builds deps for any other `deps_type` (a plain Agent's is `object`).
    weather: Agent[None, Forecast] = Agent(
        'anthropic:claude-sonnet-4-5', defer_model_check=True, output_type=Forecast, deps_type=NoneType
    )

    @weather.tool_plain
    def station(city: str) -> dict[str, float]:
        """The nearest weather station's reading."""
        return {'temp_c': 30.0}

    injector.register('weather', weather)
    return create_agentool('trip', TripInput, RoutingConfig(operation_map={'plan': 'plan'}), [plan])


def weather_double() -> AgentDouble:
    return AgentDouble(
        Script(
            Call('station', lambda run: {'city': run.prompt.removeprefix('Weather in ').rstrip('?')}),
            OutputFrom(lambda run: Forecast(summary='heat', temp_c=run.result('station')['temp_c'])),
        ),
        name='weather',
    )


async def test_a_double_answers_for_an_agent_called_from_inside_a_tool(agentool_injector: AgenToolInjector) -> None:
    trip = register_agents(agentool_injector)
    double = weather_double()
    with override_allow_model_requests(False), use_doubles(weather=double):
        assert await agentool_injector.call('trip', {'operation': 'plan', 'city': 'Rome'}) == 'Rome: pack for heat'
        assert (await trip.run('{"operation": "plan", "city": "Oslo"}')).output == 'Oslo: pack for heat'
    double.calls.assert_called('station', {'city': 'Rome'}, times=1)
    double.calls.assert_order(('station', {'city': 'Rome'}), ('station', {'city': 'Oslo'}))
    assert double.requests[0].prompt == 'Weather in Rome?'


async def test_the_override_ends_with_the_block(agentool_injector: AgenToolInjector) -> None:
    register_agents(agentool_injector)
    with use_doubles(weather=weather_double()):
        assert isinstance(agentool_injector.get('weather'), DoubledAgent)
    assert not isinstance(agentool_injector.get('weather'), DoubledAgent)


async def test_a_deterministic_agentool_can_be_doubled_too(agentool_injector: AgenToolInjector) -> None:
    create_calculator(replace=True)
    double = AgentDouble(Script(Output(42.0), when=Operation('multiply')), name='calculator')
    with use_doubles(agentool_injector, calculator=double):
        assert await agentool_injector.call('calculator', {'operation': 'multiply', 'a': 2, 'b': 3}) == 42.0
        assert (await agentool_injector.run('calculator', {'operation': 'multiply', 'a': 2, 'b': 3})).output == 42.0
    assert await agentool_injector.call('calculator', {'operation': 'multiply', 'a': 2, 'b': 3}) == 6.0


async def test_drift_from_a_doubled_agentool_fails_with_the_field(agentool_injector: AgenToolInjector) -> None:
    create_calculator(replace=True)
    double = AgentDouble(Script(Output('six')), name='calculator')
    with (
        use_doubles(calculator=double),
        pytest.raises(DriftError, match=r"double 'calculator'.*rejected the scripted output"),
    ):
        await agentool_injector.call('calculator', {'operation': 'add', 'a': 1, 'b': 2})


async def test_a_doubled_agent_keeps_its_tools_and_output_type() -> None:
    weather: Agent[None, Forecast] = Agent('anthropic:claude-sonnet-4-5', defer_model_check=True, output_type=Forecast)
    double = AgentDouble(Script(Call('nowhere'), Output(None)))
    doubled = DoubledAgent(weather, double)
    assert doubled.model is double
    assert doubled.output_type is Forecast
    with pytest.raises(DriftError, match=r"calls tool 'nowhere', which the agent does not offer \(offered: none\)"):
        await doubled.run('x')


@pytest.mark.parametrize('value', ['x', None, Script(Output(1)), Agent('test')])
def test_use_doubles_takes_only_doubles(value: Any) -> None:
    injector = AgenToolInjector()
    register_agents(injector)
    scope = use_doubles(injector, weather=value)
    with pytest.raises(ConfigurationError, match=r'use_doubles\(weather=...\) must be an AgentDouble') as caught:
        scope.__enter__()
    assert caught.value.details['option'] == 'weather'
    assert caught.value.details['value'] == repr(value)
    scope = use_doubles('injector', weather=weather_double())  # pyright: ignore[reportArgumentType]
    with pytest.raises(ConfigurationError, match='injector must be an AgenToolInjector'):
        scope.__enter__()


class ProbeInput(BaseOperationInput):
    operation: Literal['add']
    a: int
    b: int = 0


async def probe_add(a: int, b: int) -> float:
    return float(a + b)


PROBE_INPUTS = [
    '{"operation": "add"}',  # a field missing
    '{"operation": "add", "a": 1,,}',  # not JSON
    'add one and two',  # free text
    '{"operation": "sub", "a": 1}',  # an unknown operation
    '{"operation": "add", "a": "' + 'x' * 200 + '"}',  # over max_input_bytes
]


def create_probe() -> Agent[Any, float]:
    routes = RoutingConfig(operation_map={'add': 'probe_add'})
    return create_agentool('probe', ProbeInput, routes, [probe_add], output_type=float, max_input_bytes=100)


async def refusal(run: Any) -> InvalidInputError:
    with pytest.raises(InvalidInputError) as caught:
        await run
    return caught.value


@pytest.mark.parametrize('prompt', PROBE_INPUTS)
async def test_a_doubled_agentool_refuses_what_the_agentool_refuses(
    agentool_injector: AgenToolInjector, prompt: str
) -> None:
    # The double answers only input the agentool accepts: the same typed error as a stub override,
    # on every way of reaching it by name, and the double is never asked.
    create_probe()
    with agentool_injector.override(probe=lambda input: 42.0):
        expected = await refusal(agentool_injector.call('probe', prompt))
    double = AgentDouble(Script(Output(1.0)), name='probe')
    with use_doubles(probe=double):
        refused = [
            await refusal(agentool_injector.call('probe', prompt)),
            await refusal(agentool_injector.run('probe', prompt)),
            await refusal(agentool_injector.get('probe').run(prompt)),
        ]
    for error in refused:
        assert (type(error), error.message, error.details) == (type(expected), expected.message, expected.details)
    assert double.requests == []


async def test_a_doubled_agentool_answers_input_the_agentool_accepts(agentool_injector: AgenToolInjector) -> None:
    create_probe()
    prompt = '{"operation": "add", "a": 1}'
    with use_doubles(probe=AgentDouble(Script(Output(1.0)), name='probe')):
        assert await agentool_injector.call('probe', prompt) == 1.0
        assert (await agentool_injector.run('probe', {'operation': 'add', 'a': 1})).output == 1.0
        assert (await agentool_injector.get('probe').run(prompt)).output == 1.0
        # Still the agentool for the injector: a stub may replace the double in turn.
        with agentool_injector.override(probe=lambda input: 5.0):
            assert await agentool_injector.call('probe', prompt) == 5.0


async def test_a_doubled_agentool_reads_its_prompt_as_the_agentool_does(agentool_injector: AgenToolInjector) -> None:
    probe = create_probe()
    doubled = DoubledAgent(probe, AgentDouble(Script(Output(1.0)), name='probe'))
    assert (await doubled.run(['{"operation": "add",', ' "a": 1}'])).output == 1.0  # text parts, joined
    image = [ImageUrl('https://example.com/a.png')]
    expected = await refusal(probe.run(image))
    error = await refusal(doubled.run(image))
    assert (type(error), error.message, error.details) == (type(expected), expected.message, expected.details)


def test_a_doubled_agent_takes_a_registry_or_none() -> None:
    with pytest.raises(ConfigurationError, match='registry must be'):
        DoubledAgent(Agent('test'), AgentDouble(Script(Output(1))), registry='x')  # pyright: ignore[reportArgumentType]


def city_double(city: str) -> AgentDouble:
    return AgentDouble(Script(Output(Advice(city=city, temperature_c=1))), name=city)


async def test_use_doubles_for_an_unknown_name_is_typed(agentool_injector: AgenToolInjector) -> None:
    with pytest.raises(AgenToolNotFoundError) as caught, use_doubles(nope=city_double('x')):
        pass
    assert caught.value.details['agentool'] == 'nope'


async def test_a_nested_use_doubles_wins_inside_its_block(agentool_injector: AgenToolInjector) -> None:
    agentool_injector.register('advisor', advisor())
    with use_doubles(advisor=city_double('outer')):
        with use_doubles(advisor=city_double('inner')):
            assert (await agentool_injector.run('advisor', 'q')).output.city == 'inner'
        assert (await agentool_injector.run('advisor', 'q')).output.city == 'outer'
    assert get_injector() is agentool_injector


async def test_use_doubles_is_task_local(agentool_injector: AgenToolInjector) -> None:
    agentool_injector.register('advisor', advisor())

    async def ask(double: AgentDouble) -> str:
        with use_doubles(advisor=double):
            await asyncio.sleep(0)
            return (await agentool_injector.run('advisor', 'q')).output.city

    assert await asyncio.gather(ask(city_double('a')), ask(city_double('b'))) == ['a', 'b']


async def test_a_doubled_agent_wins_over_an_override_already_in_effect(agentool_injector: AgenToolInjector) -> None:
    agent = advisor()
    agentool_injector.register('advisor', agent)
    with agent.override(model=city_double('override')), use_doubles(advisor=city_double('double')):
        assert (await agentool_injector.run('advisor', 'q')).output.city == 'double'
