"""Held-out tests of `agentool.testing` written from its guides and docstrings: claims, and misuse.

Misuse must end in a typed error from `agentool.errors` naming the problem, never a foreign
exception, a silent pass or a wrong answer.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel
from pydantic_ai import Agent, ModelRetry, UnexpectedModelBehavior

from agentool import AgenToolInjector, AgenToolRegistry, get_injector, get_registry, use_registry
from agentool.errors import (
    AgenToolError,
    AgenToolNotFoundError,
    CassetteError,
    ConfigurationError,
    DriftError,
    ExpectationError,
    ScriptExhaustedError,
    UnexpectedPromptError,
    UnrecordedCallError,
)
from agentool.testing import (
    AgentDouble,
    Call,
    Output,
    OutputFrom,
    Recorder,
    Recording,
    Regex,
    Replay,
    Script,
    ScriptRun,
    use_doubles,
)
from agentool.testing.strategies import invalid_inputs, valid_inputs
from examples.calculator import create_calculator


class Advice(BaseModel):
    city: str
    temperature_c: float


def advisor(retries: int = 1) -> Agent[None, Advice]:
    agent: Agent[None, Advice] = Agent(
        'openai:gpt-5', defer_model_check=True, output_type=Advice, retries=retries, deps_type=type(None)
    )

    @agent.tool_plain
    def get_weather(lat: float, lon: float) -> dict[str, float]:
        """Weather at the coordinates."""
        return {'temperature_c': 14.0}

    @agent.tool_plain
    def explode() -> int:
        """Always fails."""
        raise ValueError('the tool exploded')

    @agent.tool_plain
    def picky(x: int) -> int:
        """Asks for a retry."""
        raise ModelRetry('x must be even')

    return agent


PARIS = Advice(city='Paris', temperature_c=14.0)


async def run(agent: Agent[None, Any], model: Any, prompt: str = 'Paris?', **kwargs: Any) -> Any:
    with agent.override(model=model):
        return (await agent.run(prompt, **kwargs)).output


# --- documented behaviour ---------------------------------------------------------------------------


async def test_a_wrong_type_reads_like_the_guide_says() -> None:
    double = AgentDouble(Script(Call('get_weather', {'lat': 'north', 'lon': 2.35}), Output(PARIS)))
    with pytest.raises(DriftError) as caught:
        await run(advisor(), double)
    assert "field 'lat': Input should be a valid number" in str(caught.value)
    assert '(got "north")' in str(caught.value)
    assert caught.value.details['tool'] == 'get_weather'
    assert caught.value.details['fields'] == ['lat']


async def test_a_tool_and_an_output_validator_raising_model_retry_are_drift() -> None:
    agent = advisor()

    @agent.output_validator
    def no_atlantis(output: Advice) -> Advice:
        if output.city == 'Atlantis':
            raise ModelRetry('no such city')
        return output

    with pytest.raises(DriftError, match="retry of the scripted call to tool 'picky': x must be even") as caught:
        await run(agent, AgentDouble(Script(Call('picky', {'x': 1}), Output(PARIS))))
    assert caught.value.details['tool'] == 'picky'
    with pytest.raises(DriftError, match='rejected the scripted output: no such city') as caught:
        await run(agent, AgentDouble(Script(Output(Advice(city='Atlantis', temperature_c=0)))))
    assert caught.value.details['tool'] is None


async def test_a_missing_field_is_drift_even_when_the_agent_allows_no_retries() -> None:
    double = AgentDouble(Script(Call('get_weather', {'lat': 1.0}), Output(PARIS)))
    with pytest.raises(DriftError) as caught:
        await run(advisor(retries=0), double)
    assert caught.value.details['fields'] == ['lon']


async def test_a_tool_exception_is_never_swallowed() -> None:
    with pytest.raises(ValueError, match='the tool exploded'):
        await run(advisor(), AgentDouble(Script(Call('explode'), Output(PARIS))))


async def test_a_used_up_script_names_the_prompt_and_the_scripts() -> None:
    double = AgentDouble(Script(Output(PARIS), when=Regex('Paris'), times=1, name='paris'))
    agent = advisor()
    assert await run(agent, double) == PARIS
    with pytest.raises(ScriptExhaustedError) as caught:
        await run(agent, double)
    assert caught.value.details == {'prompt': 'Paris?', 'scripts': ["'paris'"]}
    assert double.uses(double.scripts[0]) == 1
    assert len(double.requests) == 2  # the refused request is recorded too


async def test_one_double_answers_concurrent_runs_each_with_its_own_results() -> None:
    double = AgentDouble(
        Script(
            Call('get_weather', {'lat': 1, 'lon': 2}),
            OutputFrom(lambda run: Advice(city=run.prompt, temperature_c=run.result('get_weather')['temperature_c'])),
        )
    )
    agent = advisor()
    with agent.override(model=double):
        results = await asyncio.gather(*(agent.run(f'city {i}') for i in range(4)))
    assert [r.output.city for r in results] == [f'city {i}' for i in range(4)]
    assert len(double.calls) == 4
    assert len({record.run_id for record in double.calls}) == 4


async def test_a_second_turn_with_history_is_a_new_run() -> None:
    double = AgentDouble(Script(Output('one'), when=Regex('first')), Script(Output('two'), when=Regex('second')))
    agent: Agent[None, str] = Agent('test')
    with agent.override(model=double):
        first = await agent.run('first')
        second = await agent.run('second', message_history=first.all_messages())
    assert (first.output, second.output) == ('one', 'two')
    assert [request.prompt for request in double.requests] == ['first', 'second']


def test_reset_forgets_requests_calls_and_uses() -> None:
    double = AgentDouble(Script(Output(PARIS), times=1))
    agent = advisor()
    with agent.override(model=double):
        agent.run_sync('Paris?')
    double.reset()
    assert (len(double.requests), len(double.calls), double.uses(double.scripts[0])) == (0, 0, 0)
    with agent.override(model=double):
        assert agent.run_sync('Paris?').output == PARIS


# --- misuse of scripts and doubles ----------------------------------------------------------------


def test_a_step_that_is_not_a_step_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match='a script step is a Call') as caught:
        Script(cast(Any, 5), Output(1))
    assert caught.value.details['option'] == 'steps'


def test_script_refusals_carry_details() -> None:
    with pytest.raises(ConfigurationError) as caught:
        Script(Output(1), when=cast(Any, 5))
    assert caught.value.details == {'option': 'when', 'value': '5'}
    with pytest.raises(ConfigurationError) as caught:
        Script(Call('get_weather'))
    assert caught.value.details['option'] == 'steps'
    with pytest.raises(ConfigurationError) as caught:
        Script(Output(1), Output(2))
    assert caught.value.details['option'] == 'steps'


def test_output_from_takes_a_function() -> None:
    with pytest.raises(ConfigurationError, match='function') as caught:
        OutputFrom(cast(Any, 5))
    assert caught.value.details['option'] == 'function'


def test_a_double_name_must_be_text() -> None:
    with pytest.raises(ConfigurationError) as caught:
        AgentDouble(Script(Output(1)), name=cast(Any, 5))
    assert caught.value.details['option'] == 'name'


def test_uses_of_a_script_the_double_does_not_hold_is_a_configuration_error() -> None:
    double = AgentDouble(Script(Output(1)))
    with pytest.raises(ConfigurationError, match='does not hold') as caught:
        double.uses(Script(Output(1)))
    assert caught.value.details['option'] == 'script'


async def test_reading_a_prompt_that_is_not_json_as_json_is_an_expectation_error() -> None:
    agent: Agent[None, str] = Agent('test')
    double = AgentDouble(Script(OutputFrom(lambda run: str(run.json()))))
    with pytest.raises(ExpectationError, match='not JSON') as caught:
        await run(agent, double, 'plain words')
    assert caught.value.details['prompt'] == 'plain words'
    assert await run(agent, AgentDouble(Script(OutputFrom(lambda run: str(run.json()['a'])))), '{"a": 3}') == '3'


def test_script_run_json_outside_a_double() -> None:
    with pytest.raises(ExpectationError):
        ScriptRun(prompt='{', calls=[], messages=[]).json()


# --- misuse of the assertion helpers ----------------------------------------------------------------


@pytest.fixture
def called() -> AgentDouble:
    double = AgentDouble(Script(Call('get_weather', {'lat': 1, 'lon': 2}), Output(PARIS)))
    agent = advisor()
    with agent.override(model=double):
        agent.run_sync('Paris?')
    return double


@pytest.mark.parametrize(
    ('check', 'option'),
    [
        (lambda calls: calls.assert_called('get_weather', times='1'), 'times'),
        (lambda calls: calls.assert_called('get_weather', times=-1), 'times'),
        (lambda calls: calls.assert_called('get_weather', times=True), 'times'),
        (lambda calls: calls.assert_called('get_weather', 5), 'args'),
        (lambda calls: calls.assert_called(5), 'tool'),
        (lambda calls: calls.assert_not_called(5), 'tool'),
        (lambda calls: calls.assert_order(('get_weather',)), 'expected'),
        (lambda calls: calls.assert_order(('get_weather', 5)), 'expected'),
        (lambda calls: calls.assert_order(5), 'expected'),
    ],
)
def test_assertion_helpers_refuse_what_they_cannot_check(called: AgentDouble, check: Any, option: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        check(called.calls)
    assert caught.value.details['option'] == option


def test_assertion_helpers_still_pass_and_fail(called: AgentDouble) -> None:
    called.calls.assert_called('get_weather', {'lat': 1, 'lon': 2}, times=1)
    called.calls.assert_called('get_weather', times=1)
    called.calls.assert_called('explode', times=0)
    called.calls.assert_order(('get_weather', {'lat': 1, 'lon': 2}))
    with pytest.raises(ExpectationError, match=r'calls made: get_weather\({"lat":1,"lon":2}\)'):
        called.calls.assert_called('get_weather', times=2)


# --- use_doubles ---------------------------------------------------------------------------------


def weather_double(city: str) -> AgentDouble:
    return AgentDouble(Script(Output(Advice(city=city, temperature_c=1))), name=city)


async def test_use_doubles_for_an_unknown_name_is_typed(agentool_injector: AgenToolInjector) -> None:
    with pytest.raises(AgenToolNotFoundError) as caught, use_doubles(nope=weather_double('x')):
        pass
    assert caught.value.details['agentool'] == 'nope'


async def test_a_nested_use_doubles_wins_inside_its_block(agentool_injector: AgenToolInjector) -> None:
    agentool_injector.register('advisor', advisor())
    with use_doubles(advisor=weather_double('outer')):
        with use_doubles(advisor=weather_double('inner')):
            assert (await agentool_injector.run('advisor', 'q')).output.city == 'inner'
        assert (await agentool_injector.run('advisor', 'q')).output.city == 'outer'
    assert get_injector() is agentool_injector


async def test_use_doubles_is_task_local(agentool_injector: AgenToolInjector) -> None:
    agentool_injector.register('advisor', advisor())

    async def ask(double: AgentDouble) -> str:
        with use_doubles(advisor=double):
            await asyncio.sleep(0)
            return (await agentool_injector.run('advisor', 'q')).output.city

    assert await asyncio.gather(ask(weather_double('a')), ask(weather_double('b'))) == ['a', 'b']


# --- record and replay ---------------------------------------------------------------------------


def paris_double() -> AgentDouble:
    return AgentDouble(Script(Call('get_weather', {'lat': 48.86, 'lon': 2.35}), Output(PARIS)))


async def record(path: Path) -> dict[str, Any]:
    await run(advisor(), paris_double(), capabilities=[Recorder(path)])
    return Recording.load(path).model_dump(mode='json')


async def test_a_streamed_run_is_recorded_and_replayed(tmp_path: Path) -> None:
    agent = advisor()
    path = tmp_path / 'stream.json'
    with agent.override(model=paris_double()):
        async with agent.run_stream('Paris?', capabilities=[Recorder(path)]) as stream:
            assert await stream.get_output() == PARIS
    replay = Replay(path)
    assert await run(agent, replay.model, capabilities=[replay]) == PARIS
    replay.calls.assert_called('get_weather', {'lat': 48.86, 'lon': 2.35})


async def test_a_nested_run_is_recorded_by_the_run_it_was_given_to(tmp_path: Path) -> None:
    inner = advisor()
    outer: Agent[None, str] = Agent('test')

    @outer.tool_plain
    async def ask_inner(question: str) -> str:
        return (await inner.run(question)).output.city

    path = tmp_path / 'nested.json'
    outer_double = AgentDouble(
        Script(Call('ask_inner', {'question': 'where?'}), OutputFrom(lambda run: run.result('ask_inner')))
    )
    with outer.override(model=outer_double), inner.override(model=paris_double()):
        assert (await outer.run('go', capabilities=[Recorder(path)])).output == 'Paris'
    runs = json.loads(path.read_text())['runs']
    assert [r['prompt'] for r in runs] == ['go']
    replay = Replay(path)
    assert await run(outer, replay.model, 'go', capabilities=[replay]) == 'Paris'  # the inner agent is not run


async def test_a_drifted_recording_is_drift(tmp_path: Path) -> None:
    data = await record(tmp_path / 'paris.json')
    data['runs'][0]['steps'][0][0]['args'] = {'latitude': 48.86, 'lon': 2.35}
    (tmp_path / 'drift.json').write_text(json.dumps(data))
    replay = Replay(tmp_path / 'drift.json')
    with pytest.raises(DriftError) as caught:
        await run(advisor(), replay.model, capabilities=[replay])
    assert caught.value.details['fields'] == ['lat', 'latitude']


async def test_a_recording_whose_results_are_gone_is_an_unrecorded_call(tmp_path: Path) -> None:
    data = await record(tmp_path / 'paris.json')
    data['tool_calls'] = []  # a cassette keeps every tool result in one list
    replay = Replay(Recording.model_validate(data))
    with pytest.raises(UnrecordedCallError) as caught:
        await run(advisor(), replay.model, capabilities=[replay])
    assert caught.value.details['tool'] == 'get_weather'


@pytest.mark.parametrize(
    'content',
    [b'not json', b'\xff\xfe', b'{"format": "agentool-recording", "version": 2, "runs": []}', b'[]'],
)
def test_a_malformed_recording_is_a_cassette_error(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / 'bad.json'
    path.write_bytes(content)
    with pytest.raises(CassetteError, match=r'not an agentool cassette|recording version 2') as caught:
        Replay(path)
    assert caught.value.details['path'] == str(path)


def test_a_directory_given_as_a_recording_is_a_cassette_error(tmp_path: Path) -> None:
    with pytest.raises(CassetteError, match='cannot read') as caught:
        Replay(tmp_path)
    assert caught.value.details['path'] == str(tmp_path)


def test_a_recorder_that_cannot_write_its_file_is_a_cassette_error(tmp_path: Path) -> None:
    agent = advisor()
    with agent.override(model=paris_double()), pytest.raises(CassetteError, match='cannot write') as caught:
        agent.run_sync('Paris?', capabilities=[Recorder(tmp_path)])
    assert caught.value.details['path'] == str(tmp_path)
    assert list(tmp_path.iterdir()) == []  # no temporary file left behind


def test_a_recorder_refuses_an_empty_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigurationError) as caught:
        Recorder('')
    assert caught.value.details['option'] == 'path'
    assert list(tmp_path.iterdir()) == []


def test_an_empty_recording_object_is_refused_with_details() -> None:
    with pytest.raises(ConfigurationError, match='holds nothing to replay') as caught:
        Replay(Recording())
    assert caught.value.details['option'] == 'source'


# --- strategies ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ('build', 'option'),
    [
        (lambda: valid_inputs(cast(Any, 5)), 'agentool'),
        (lambda: invalid_inputs(cast(Any, 5)), 'agentool'),
        (lambda: valid_inputs('calculator', fields=cast(Any, 5)), 'fields'),
        (lambda: valid_inputs('calculator', fields=cast(Any, {'a': 5})), 'fields'),
        (lambda: valid_inputs('calculator', fields={'bogus': st.just(1)}), 'fields'),
        (lambda: valid_inputs('calculator', registry=cast(Any, 5)), 'registry'),
        (lambda: invalid_inputs('calculator', registry=cast(Any, 5)), 'registry'),
    ],
)
def test_strategies_refuse_bad_arguments_with_a_configuration_error(build: Any, option: str) -> None:
    create_calculator(replace=True)

    def draw() -> None:
        @settings(max_examples=1, database=None)
        @given(build())
        def drawing(value: Any) -> None: ...

        drawing()

    with pytest.raises(ConfigurationError) as caught:
        draw()
    assert caught.value.details['option'] == option


def test_strategies_look_the_agentool_up_when_drawn() -> None:
    strategy = valid_inputs('calculator', 'add')  # built before the agentool exists
    create_calculator(replace=True)
    assert get_registry().list_names() == ['calculator']

    @settings(max_examples=5, database=None)
    @given(strategy)
    def drawing(value: dict[str, Any]) -> None:
        assert value['operation'] == 'add'

    drawing()


def test_every_error_here_is_an_agentool_error() -> None:
    assert issubclass(ExpectationError, AgenToolError)
    assert issubclass(ExpectationError, AssertionError)
    assert issubclass(UnexpectedPromptError, AssertionError)


# --- as the guide says for an agent that allows no retries -----------------------------------------


async def test_with_no_retries_a_wrong_type_ends_in_pydantic_ais_error_as_the_guide_says() -> None:
    double = AgentDouble(Script(Call('get_weather', {'lat': 'north', 'lon': 2.35}), Output(PARIS)))
    with pytest.raises(UnexpectedModelBehavior, match='exceeded max retries'):
        await run(advisor(retries=0), double)
    with pytest.raises(UnexpectedModelBehavior, match='Exceeded maximum output retries'):
        await run(advisor(retries=0), AgentDouble(Script(Output({'city': 'Paris', 'temperature_c': 'warm'}))))


# --- testing.md: one fresh registry (and injector) per test ------------------------------------------


async def test_registries_of_concurrent_blocks_do_not_leak() -> None:
    async def make(replace: bool) -> list[str]:
        with use_registry() as fresh:
            create_calculator(replace=replace)
            await asyncio.sleep(0)
            assert get_registry() is fresh
            return fresh.list_names()

    outside = get_registry()
    assert await asyncio.gather(make(False), make(False)) == [['calculator'], ['calculator']]
    assert outside.list_names() == []


def test_the_registry_fixture_brings_a_fresh_injector(agentool_registry: AgenToolRegistry) -> None:
    assert get_registry() is agentool_registry
    inside = get_injector()
    with use_registry():
        assert get_injector() is not inside
    assert get_injector() is inside


def test_a_compiled_bytes_pattern_is_refused_when_built() -> None:
    with pytest.raises(ConfigurationError, match='pattern') as caught:
        Regex(cast(Any, re.compile(b'Paris')))
    assert caught.value.details['option'] == 'pattern'


async def test_an_argument_json_cannot_carry_is_a_configuration_error_naming_the_tool() -> None:
    double = AgentDouble(Script(Call('get_weather', {'lat': object(), 'lon': 2.35}), Output(PARIS)))
    with pytest.raises(ConfigurationError, match="Call\\('get_weather'\\) args must be JSON-compatible") as caught:
        await run(advisor(), double)
    assert caught.value.details['tool'] == 'get_weather'


async def test_an_exception_from_a_script_function_is_not_swallowed() -> None:
    def broken(run: ScriptRun) -> Advice:
        raise KeyError('scripted bug')

    with pytest.raises(KeyError, match='scripted bug'):
        await run(advisor(), AgentDouble(Script(OutputFrom(broken))))


def test_a_double_without_scripts_is_refused_with_details() -> None:
    with pytest.raises(AgenToolError, match='needs at least one Script') as caught:
        AgentDouble()
    assert caught.value.details['option'] == 'scripts'


async def test_a_doubled_agent_wins_over_an_override_already_in_effect(agentool_injector: AgenToolInjector) -> None:
    agent = advisor()
    agentool_injector.register('advisor', agent)
    with agent.override(model=weather_double('override')), use_doubles(advisor=weather_double('double')):
        assert (await agentool_injector.run('advisor', 'q')).output.city == 'double'
