"""`AgentDouble`: scripted steps, routing, recording, assertions, guards and streaming, through public APIs.

Doubles reached by name through the injector: `use_doubles` and `DoubledAgent`.
"""

from __future__ import annotations

import asyncio
import json
import re
from types import NoneType
from typing import Any, Literal, cast
from unittest.mock import ANY

import pytest
from pydantic import BaseModel
from pydantic_ai import Agent, ImageUrl, ModelRetry, NativeOutput, PromptedOutput, UnexpectedModelBehavior
from pydantic_ai.direct import model_request
from pydantic_ai.messages import ModelRequest, ToolReturnPart
from pydantic_ai.models import ModelRequestParameters, override_allow_model_requests
from pydantic_ai.tools import ToolDefinition

from agentool import BaseOperationInput, RoutingConfig, create_agentool
from agentool.core.injector import AgenToolInjector, get_injector
from agentool.errors import (
    AgenToolError,
    AgenToolNotFoundError,
    ConfigurationError,
    DoubleError,
    DriftError,
    ExpectationError,
    InvalidInputError,
    ScriptExhaustedError,
    UnexpectedPromptError,
)
from agentool.testing import (
    AgentDouble,
    Call,
    DoubledAgent,
    Operation,
    Output,
    OutputFrom,
    Predicate,
    Prompt,
    Regex,
    Script,
    ScriptRun,
    use_doubles,
)
from examples.calculator import create_calculator
from tests.agentools import PARIS, Advice, advisor, run_with


class Forecast(BaseModel):
    city: str
    summary: str
    temp_c: float


class Alert(BaseModel):
    level: int


MODEL = 'anthropic:claude-sonnet-4-5'
"""A real model name, never reached: each test replaces it with a double."""


def weather_agent(output_type: Any = Forecast) -> Agent[None, Any]:
    """An LLM-style agent with two tools; its real model is never reached in these tests."""
    agent: Agent[None, Any] = Agent(MODEL, defer_model_check=True, output_type=output_type, instructions='Weather bot.')

    @agent.tool_plain
    def geocode(city: str) -> dict[str, float]:
        """Coordinates of a city."""
        if city == 'Atlantis':
            raise ModelRetry('no such city')
        return {'lat': 48.85, 'lon': 2.35}

    @agent.tool_plain
    def weather(lat: float, lon: float, days: int = 1) -> dict[str, Any]:
        """The weather at coordinates."""
        return {'temp_c': 21.5, 'sky': 'sunny', 'days': days}

    return agent


def paris_script(**kwargs: Any) -> Script:
    return Script(
        Call('geocode', {'city': 'Paris'}),
        Call('weather', lambda run: run.result('geocode')),
        OutputFrom(lambda run: Forecast(city='Paris', summary=run.result('weather')['sky'], temp_c=21.5)),
        **kwargs,
    )


async def test_scripted_calls_reach_the_real_tools_and_the_output_is_typed() -> None:
    agent = weather_agent()
    double = AgentDouble(paris_script(), name='weather')
    with agent.override(model=double):
        result = await agent.run('Weather in Paris?')
    assert result.output == Forecast(city='Paris', summary='sunny', temp_c=21.5)
    assert [c.describe() for c in double.calls] == ['geocode({"city":"Paris"})', 'weather({"lat":48.85,"lon":2.35})']
    assert double.calls[1].result == {'temp_c': 21.5, 'sky': 'sunny', 'days': 1}


async def test_parallel_calls_in_one_step_and_async_output_function() -> None:
    agent = weather_agent()

    async def summary(run: ScriptRun) -> Forecast:
        return Forecast(city=run.prompt, summary=str(len(run.calls)), temp_c=run.result('weather')['temp_c'])

    both = [Call('geocode', {'city': 'Oslo'}), Call('weather', {'lat': 1, 'lon': 2})]
    double = AgentDouble(Script(both, OutputFrom(summary)))
    with agent.override(model=double):
        result = await agent.run('Oslo')
    assert result.output == Forecast(city='Oslo', summary='2', temp_c=21.5)
    assert len(double.requests) == 2
    assert {c.tool for c in double.requests[1].tool_results} == {'geocode', 'weather'}


async def test_every_request_is_recorded() -> None:
    agent = weather_agent()
    double = AgentDouble(paris_script(name='paris'))
    with agent.override(model=double):
        await agent.run('Weather in Paris?')
    first, second, third = double.requests
    assert (first.prompt, first.instructions) == ('Weather in Paris?', 'Weather bot.')
    assert first.tool_names == ['geocode', 'weather']
    assert [t.name for t in first.output_tools] == ['final_result']
    assert (first.script, first.step, first.tool_results) == ("'paris'", 1, ())
    assert [(c.tool, c.result) for c in second.tool_results] == [('geocode', {'lat': 48.85, 'lon': 2.35})]
    assert third.step == 3
    assert first.tools[0].parameters_json_schema['required'] == ['city']


async def test_assertion_helpers_pass_and_fail_with_the_calls_made() -> None:
    agent = weather_agent()
    double = AgentDouble(paris_script())
    with agent.override(model=double):
        await agent.run('Weather in Paris?')
        await agent.run('Paris again')
    calls = double.calls
    calls.assert_called('geocode')
    calls.assert_called('geocode', {'city': 'Paris'}, times=2)
    calls.assert_called('weather', {'lat': ANY, 'lon': 2.35})
    calls.assert_not_called('forecast')
    calls.assert_order('geocode', ('weather', {'lat': 48.85, 'lon': 2.35}), 'geocode')
    assert calls.call_count('weather') == 2
    not_with = r"tool 'geocode' was not called with \{\"city\":\"Rome\"\}; calls made: geocode"
    with pytest.raises(ExpectationError, match=not_with):
        calls.assert_called('geocode', {'city': 'Rome'})
    with pytest.raises(ExpectationError, match=r"tool 'weather' was called 2 time\(s\), expected 1"):
        calls.assert_called('weather', times=1)
    with pytest.raises(ExpectationError, match="tool 'geocode' was called, expected no call"):
        calls.assert_not_called('geocode')
    with pytest.raises(ExpectationError, match=r"expected order 'weather' then 'weather' then 'weather'"):
        calls.assert_order('weather', 'weather', 'weather')
    with pytest.raises(AssertionError):  # a DoubleError is an AssertionError: pytest shows a failure
        calls.assert_called('nothing')


# --- routing -------------------------------------------------------------------------------------


async def test_routing_by_operation_regex_and_predicate() -> None:
    agent = weather_agent(str)
    double = AgentDouble(
        Script(Output('by operation'), when=Operation('forecast')),
        Script(Output('by kind'), when=Operation('alert', field='kind')),
        Script(Output('by regex'), when=Regex(r'^weather in \w+$')),
        Script(Output('by predicate'), when=lambda prompt: prompt.isupper()),
        Script(Output('fallback')),
    )
    prompts = ['{"operation": "forecast"}', '{"kind": "alert"}', 'weather in Rome', 'HELLO', 'anything else']
    with agent.override(model=double):
        outputs = [(await agent.run(p)).output for p in prompts]
    assert outputs == ['by operation', 'by kind', 'by regex', 'by predicate', 'fallback']


async def test_times_makes_a_queue_and_exhaustion_fails_clearly() -> None:
    agent = weather_agent(str)
    first, second = Script(Output('one'), times=1), Script(Output('two'), times=1, name='second')
    double = AgentDouble(first, second, name='queue')
    with agent.override(model=double):
        assert (await agent.run('a')).output == 'one'
        assert (await agent.run('b')).output == 'two'
        used_up = r"double 'queue': every script for prompt 'c' is used up .*'second' answered 1 of 1"
        with pytest.raises(ScriptExhaustedError, match=used_up):
            await agent.run('c')
    assert (double.uses(first), double.uses(second)) == (1, 1)
    double.reset()
    with agent.override(model=double):
        assert (await agent.run('a')).output == 'one'


async def test_unexpected_prompt_names_the_prompt_and_the_scripts() -> None:
    agent = weather_agent(str)
    digits = Predicate(str.isdigit, description='digits')
    double = AgentDouble(Script(Output('x'), when=Prompt('hi')), Script(Output('y'), when=digits))
    with agent.override(model=double), pytest.raises(UnexpectedPromptError) as caught:
        await agent.run('bye')
    scripts = "#1 (prompt 'hi'), #2 (digits)"
    assert str(caught.value) == f"double 'double': no script matches prompt 'bye' (scripts: {scripts})"
    assert caught.value.details['prompt'] == 'bye'
    assert double.requests[0].script is None


async def test_an_output_validator_rejecting_the_scripted_output_is_drift() -> None:
    agent = weather_agent(str)
    double = AgentDouble(Script(Output('done')))

    @agent.output_validator
    def never_happy(output: str) -> str:
        raise ModelRetry('try again')

    with agent.override(model=double), pytest.raises(DriftError, match=r'rejected the scripted output: try again$'):
        await agent.run('x')


async def test_a_request_past_the_last_step_is_exhausted() -> None:
    # An agent run ends at the scripted output; direct requests (no run) can keep asking.
    double = AgentDouble(Script(Call('geocode', {'city': 'Rome'}), Output('done'), name='rome'))
    geocode = ToolDefinition(name='geocode', parameters_json_schema={'type': 'object', 'properties': {}})
    params = ModelRequestParameters(function_tools=[geocode])
    first = await model_request(double, [ModelRequest.user_text_prompt('Rome')], model_request_parameters=params)
    (call,) = first.tool_calls
    answer = ModelRequest(parts=[ToolReturnPart('geocode', {'lat': 1}, tool_call_id=call.tool_call_id)])
    second = await model_request(double, [answer], model_request_parameters=params)
    assert second.text == 'done'
    with pytest.raises(ScriptExhaustedError) as caught:
        await model_request(double, [answer], model_request_parameters=params)
    assert str(caught.value) == "double 'double': script 'rome' has 2 step(s) and the run asked for step 3"
    assert double.calls[0].result == {'lat': 1}
    # A new prompt outside a run starts the script again.
    again = await model_request(double, [ModelRequest.user_text_prompt('Rome')], model_request_parameters=params)
    assert again.tool_calls[0].tool_name == 'geocode'


def test_a_double_without_scripts_is_refused() -> None:
    with pytest.raises(DoubleError, match='needs at least one Script') as caught:
        AgentDouble()
    assert caught.value.details['option'] == 'scripts'


@pytest.mark.parametrize(
    ('build', 'option', 'message'),
    [
        (lambda: Call('geocode', '{"city": "Paris"}'), 'args', r'mapping \(a dict\).*json\.loads'),  # pyright: ignore[reportArgumentType]
        (lambda: Call('geocode', [1]), 'args', r'must be a mapping \(a dict\) or a function of the run; got \[1\]'),  # pyright: ignore[reportArgumentType]
        (lambda: Call(5), 'tool', 'must be a tool name'),  # pyright: ignore[reportArgumentType]
        (lambda: Script(Output(1), times=0), 'times', 'times must be a positive int'),
        (lambda: Script(Output(1), times='2'), 'times', 'a positive int'),  # pyright: ignore[reportArgumentType]
        (lambda: Script(Output(1), times=True), 'times', 'a positive int'),
        (lambda: AgentDouble(Output(1)), 'scripts', 'takes Script objects'),  # pyright: ignore[reportArgumentType]
        (lambda: Script(Output(1), when=Regex('(')), 'pattern', r"Regex\('\('\) is not a valid regular expression"),
        (lambda: Regex(5), 'pattern', 'must be a string or a compiled re.Pattern'),  # pyright: ignore[reportArgumentType]
        (lambda: Regex('x', flags='i'), 'flags', 're flags'),  # pyright: ignore[reportArgumentType]
        (lambda: Operation(5), 'value', 'value must be a string; got 5'),  # pyright: ignore[reportArgumentType]
        (lambda: Operation('add', field=''), 'field', 'must be a field name'),
        (lambda: Script(Output(1), name=5), 'name', 'name must be a string or None; got 5'),  # pyright: ignore[reportArgumentType]
        (lambda: Prompt(5), 'text', 'text must be a string'),  # pyright: ignore[reportArgumentType]
        (lambda: Predicate('yes'), 'function', 'function must be a function'),  # pyright: ignore[reportArgumentType]
        (lambda: Script(cast(Any, 5), Output(1)), 'steps', 'a script step is a Call'),
        (lambda: Script(Call('get_weather')), 'steps', 'must end with its final output'),
        (lambda: Script(Output(1), Output(2)), 'steps', 'one final output, as its last step'),
        (lambda: Script([], Output(1)), 'steps', 'a script step is a Call'),
        (lambda: Script([Call('geocode'), 'geocode'], Output(1)), 'steps', 'a script step is a Call'),  # pyright: ignore[reportArgumentType]
        (lambda: Script(Output(1), when='Paris'), 'when', r"takes a Matcher or a function of the prompt; got 'Paris'"),  # pyright: ignore[reportArgumentType]
        (lambda: OutputFrom(cast(Any, 5)), 'function', 'function'),
        (lambda: AgentDouble(Script(Output(1)), name=cast(Any, 5)), 'name', 'name must be a string; got 5'),
        (lambda: Regex(cast(Any, re.compile(b'Paris'))), 'pattern', 'pattern'),
        (lambda: AgentDouble(Script(Output(1))).uses(Script(Output(1))), 'script', 'does not hold'),
        (
            lambda: DoubledAgent(Agent('test'), AgentDouble(Script(Output(1))), registry=cast(Any, 'x')),
            'registry',
            'registry must be',
        ),
    ],
)
def test_bad_options_are_refused_naming_the_option(build: Any, option: str, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message) as caught:
        build()
    assert caught.value.details['option'] == option


def test_a_regex_matcher_compiles_once_given_and_takes_flags() -> None:
    assert Regex('paris', flags=re.IGNORECASE).matches('Weather in PARIS?')
    assert Regex(re.compile('Par')).matches('Paris')
    with pytest.raises(ConfigurationError, match='not a valid regular expression') as caught:
        Regex(re.compile('Par'), flags=re.IGNORECASE)  # flags cannot be given with a compiled pattern
    assert caught.value.details['pattern'] == 'Par'


async def test_an_args_function_returning_no_mapping_fails_clearly() -> None:
    double = AgentDouble(Script(Call('geocode', lambda run: run.prompt), Output(None)))  # pyright: ignore[reportArgumentType]
    with pytest.raises(ConfigurationError, match=r"args function of Call\('geocode'\) must return a mapping") as caught:
        await weather_agent(output_type=str | None).run('Paris', model=double)
    assert caught.value.details['tool'] == 'geocode'


# --- drift ---------------------------------------------------------------------------------------


async def drift(double: AgentDouble, output_type: Any = Forecast) -> DriftError:
    """The drift a run of the weather agent on `double` ends in."""
    agent = weather_agent(output_type)
    with agent.override(model=double), pytest.raises(DriftError) as caught:
        await agent.run('x')
    return caught.value


async def test_a_call_to_a_tool_the_agent_does_not_offer_is_drift() -> None:
    error = await drift(AgentDouble(Script(Call('forecast', {'city': 'Paris'}), Output(None)), name='weather'))
    assert str(error) == (
        "double 'weather', script #1 step 1 calls tool 'forecast', which the agent does not offer "
        "(offered: 'geocode', 'weather')"
    )
    assert error.details['cause'] == 'unknown_tool'


@pytest.mark.parametrize(
    ('args', 'message', 'fields'),
    [
        ({'lat': 1}, "calls tool 'weather' without its required field 'lon'", ['lon']),
        (
            {'hours': 3, 'when': 'now'},
            "calls tool 'weather' without its required fields 'lat', 'lon'; it also passes fields 'hours', 'when', "
            'which it does not take',
            ['lat', 'lon', 'hours', 'when'],  # every drifted field at once
        ),
        (
            {'lat': 1, 'lon': 2, 'hours': 3},
            "calls tool 'weather' with field 'hours', which it does not take",
            ['hours'],
        ),
        (
            {'lat': 'north', 'lon': 2},
            "the agent rejected the scripted call to tool 'weather': field 'lat': Input should be a valid number, "
            'unable to parse string as a number (got "north")',
            ['lat'],
        ),
    ],
)
async def test_arguments_that_do_not_fit_the_tool_schema_are_drift(
    args: dict[str, Any], message: str, fields: list[str]
) -> None:
    error = await drift(AgentDouble(Script(Call('weather', args), Output(None))))
    assert message in str(error)
    assert (error.details['tool'], error.details['fields']) == ('weather', fields)


async def test_an_output_that_does_not_fit_the_output_type_is_drift() -> None:
    error = await drift(AgentDouble(Script(Output({'city': 'Paris', 'summary': 'ok', 'temp_c': 'hot'}))))
    assert str(error) == (
        "double 'double', script #1 step 1: the agent rejected the scripted output: field 'temp_c': Input should be "
        'a valid number, unable to parse string as a number (got "hot")'
    )
    assert (error.details['tool'], error.details['fields']) == (None, ['temp_c'])


@pytest.mark.parametrize('mode', [NativeOutput, PromptedOutput])
async def test_output_drift_in_native_and_prompted_modes(mode: Any) -> None:
    agent = weather_agent(mode(Forecast))
    double = AgentDouble(Script(Output({'city': 'Paris', 'summary': 'ok'})))
    with (
        agent.override(model=double),
        pytest.raises(DriftError, match=r"rejected the scripted output: field 'temp_c': Field required$"),
    ):
        await agent.run('x')
    good = AgentDouble(Script(Output(Forecast(city='Paris', summary='ok', temp_c=1))))
    with agent.override(model=good):
        assert (await agent.run('x')).output.temp_c == 1


async def test_a_tool_asking_for_a_retry_fails_the_test_with_its_message() -> None:
    error = await drift(AgentDouble(Script(Call('geocode', {'city': 'Atlantis'}), Output(None))))
    assert str(error) == (
        "double 'double', script #1 step 1: the agent asked for a retry of the scripted call to tool 'geocode': "
        'no such city'
    )
    assert error.details['cause'] == 'model_retry'


async def test_union_outputs_pick_the_matching_output_tool() -> None:
    agent = weather_agent(Forecast | Alert)
    forecast = Script(Output({'city': 'P', 'summary': 's', 'temp_c': 2}))
    double = AgentDouble(Script(Output(Alert(level=3)), when=Regex('alert')), forecast)
    with agent.override(model=double):
        assert (await agent.run('alert')).output == Alert(level=3)
        assert (await agent.run('forecast')).output == Forecast(city='P', summary='s', temp_c=2)


async def test_an_output_no_output_shape_accepts_is_drift() -> None:
    error = await drift(AgentDouble(Script(Output(['not', 'an', 'object']))), Forecast | Alert)
    assert 'the scripted output fits none of the shapes' in str(error)


# --- guards, turns and streaming -----------------------------------------------------------------


async def test_works_while_real_model_requests_are_forbidden() -> None:
    agent = weather_agent()
    double = AgentDouble(paris_script())
    with override_allow_model_requests(False), agent.override(model=double):
        assert (await agent.run('Paris')).output.city == 'Paris'


async def test_a_second_turn_with_history_starts_a_new_script_run() -> None:
    agent = weather_agent(str)
    double = AgentDouble(Script(Output('first'), times=1), Script(OutputFrom(lambda run: f'second: {run.prompt}')))
    with agent.override(model=double):
        first = await agent.run('hello')
        second = await agent.run('again', message_history=first.all_messages())
    assert (first.output, second.output) == ('first', 'second: again')


async def test_run_stream_gives_the_scripted_output() -> None:
    agent = weather_agent()
    double = AgentDouble(paris_script())
    with agent.override(model=double):
        async with agent.run_stream('Paris') as stream:
            output = await stream.get_output()
    assert output == Forecast(city='Paris', summary='sunny', temp_c=21.5)
    double.calls.assert_order('geocode', 'weather')


async def test_run_stream_of_text_streams_the_text() -> None:
    agent = weather_agent(str)
    double = AgentDouble(Script(Call('geocode', {'city': 'Rome'}), Output('sunny in Rome')))
    with agent.override(model=double):
        async with agent.run_stream('Rome') as stream:
            chunks = [chunk async for chunk in stream.stream_text()]
    assert chunks[-1] == 'sunny in Rome'


async def test_run_stream_events_sees_tool_calls_and_the_result() -> None:
    agent = weather_agent()
    double = AgentDouble(paris_script())
    with agent.override(model=double):
        async with agent.run_stream_events('Paris') as stream:
            events = [event async for event in stream]
    kinds = [type(e).__name__ for e in events]
    assert 'FunctionToolCallEvent' in kinds
    assert 'FunctionToolResultEvent' in kinds
    assert events[-1].result.output.city == 'Paris'  # pyright: ignore[reportAttributeAccessIssue]


async def test_drift_also_fails_a_streamed_run() -> None:
    agent = weather_agent()
    double = AgentDouble(Script(Call('weather', {'lat': 'x', 'lon': 1}), Output(None)))
    with agent.override(model=double), pytest.raises(DriftError, match="field 'lat'"):
        async with agent.run_stream('x') as stream:
            await stream.get_output()


def test_run_sync_and_json_prompts() -> None:
    agent = weather_agent(str)
    double = AgentDouble(Script(OutputFrom(lambda run: json.dumps(run.json()['n'] * 2)), when=Operation('double')))
    with agent.override(model=double):
        assert agent.run_sync('{"operation": "double", "n": 21}').output == '42'


async def test_asking_for_a_result_that_never_came_back_fails_clearly() -> None:
    agent = weather_agent(str)
    double = AgentDouble(Script(OutputFrom(lambda run: run.result('geocode'))))
    with (
        agent.override(model=double),
        pytest.raises(ExpectationError, match="result of tool 'geocode', which has not returned"),
    ):
        await agent.run('x')


async def test_a_wrong_type_reads_like_the_guide_says() -> None:
    double = AgentDouble(Script(Call('get_weather', {'lat': 'north', 'lon': 2.35}), Output(PARIS)))
    with pytest.raises(DriftError) as caught:
        await run_with(advisor(), double)
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
        await run_with(agent, AgentDouble(Script(Call('picky', {'x': 1}), Output(PARIS))))
    assert caught.value.details['tool'] == 'picky'
    with pytest.raises(DriftError, match='rejected the scripted output: no such city') as caught:
        await run_with(agent, AgentDouble(Script(Output(Advice(city='Atlantis', temperature_c=0)))))
    assert caught.value.details['tool'] is None


async def test_a_missing_field_is_drift_even_when_the_agent_allows_no_retries() -> None:
    double = AgentDouble(Script(Call('get_weather', {'lat': 1.0}), Output(PARIS)))
    with pytest.raises(DriftError) as caught:
        await run_with(advisor(retries=0), double)
    assert caught.value.details['fields'] == ['lon']


async def test_a_tool_exception_is_never_swallowed() -> None:
    with pytest.raises(ValueError, match='the tool exploded'):
        await run_with(advisor(), AgentDouble(Script(Call('explode'), Output(PARIS))))


async def test_a_used_up_script_names_the_prompt_and_the_scripts() -> None:
    double = AgentDouble(Script(Output(PARIS), when=Regex('Paris'), times=1, name='paris'))
    agent = advisor()
    assert await run_with(agent, double) == PARIS
    with pytest.raises(ScriptExhaustedError) as caught:
        await run_with(agent, double)
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


def test_script_refusals_carry_details() -> None:
    with pytest.raises(ConfigurationError) as caught:
        Script(Output(1), when=cast(Any, 5))
    assert caught.value.details == {'option': 'when', 'value': '5'}


async def test_reading_a_prompt_that_is_not_json_as_json_is_an_expectation_error() -> None:
    agent: Agent[None, str] = Agent('test')
    double = AgentDouble(Script(OutputFrom(lambda run: str(run.json()))))
    with pytest.raises(ExpectationError, match='not JSON') as caught:
        await run_with(agent, double, 'plain words')
    assert caught.value.details['prompt'] == 'plain words'
    assert await run_with(agent, AgentDouble(Script(OutputFrom(lambda run: str(run.json()['a'])))), '{"a": 3}') == '3'


def test_script_run_json_outside_a_double() -> None:
    with pytest.raises(ExpectationError):
        ScriptRun(prompt='{', calls=[], messages=[]).json()


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


def test_the_testing_errors_are_agentool_errors_and_assertion_errors() -> None:
    assert issubclass(ExpectationError, AgenToolError)
    assert issubclass(ExpectationError, AssertionError)
    assert issubclass(UnexpectedPromptError, AssertionError)


async def test_with_no_retries_a_wrong_type_ends_in_pydantic_ais_error_as_the_guide_says() -> None:
    double = AgentDouble(Script(Call('get_weather', {'lat': 'north', 'lon': 2.35}), Output(PARIS)))
    with pytest.raises(UnexpectedModelBehavior, match='exceeded max retries'):
        await run_with(advisor(retries=0), double)
    with pytest.raises(UnexpectedModelBehavior, match='Exceeded maximum output retries'):
        await run_with(advisor(retries=0), AgentDouble(Script(Output({'city': 'Paris', 'temperature_c': 'warm'}))))


async def test_an_argument_json_cannot_carry_is_a_configuration_error_naming_the_tool() -> None:
    double = AgentDouble(Script(Call('get_weather', {'lat': object(), 'lon': 2.35}), Output(PARIS)))
    with pytest.raises(ConfigurationError, match="Call\\('get_weather'\\) args must be JSON-compatible") as caught:
        await run_with(advisor(), double)
    assert caught.value.details['tool'] == 'get_weather'


async def test_an_exception_from_a_script_function_is_not_swallowed() -> None:
    def broken(run: ScriptRun) -> Advice:
        raise KeyError('scripted bug')

    with pytest.raises(KeyError, match='scripted bug'):
        await run_with(advisor(), AgentDouble(Script(OutputFrom(broken))))


class Outlook(BaseModel):
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
    weather: Agent[None, Outlook] = Agent(MODEL, defer_model_check=True, output_type=Outlook, deps_type=NoneType)

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
            OutputFrom(lambda run: Outlook(summary='heat', temp_c=run.result('station')['temp_c'])),
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
    weather: Agent[None, Outlook] = Agent(MODEL, defer_model_check=True, output_type=Outlook)
    double = AgentDouble(Script(Call('nowhere'), Output(None)))
    doubled = DoubledAgent(weather, double)
    assert doubled.model is double
    assert doubled.output_type is Outlook
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


async def refusal(run: Any) -> tuple[type[InvalidInputError], str, dict[str, Any]]:
    """The typed error `run` ends with, as its class, message and details."""
    with pytest.raises(InvalidInputError) as caught:
        await run
    return type(caught.value), caught.value.message, caught.value.details


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
    assert refused == [expected] * 3
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
    assert await refusal(doubled.run(image)) == await refusal(probe.run(image))


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
