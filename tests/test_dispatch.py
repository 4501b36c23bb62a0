"""Dispatch before the model: rules in front of an agent answer structured turns with no model call."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, replace
from typing import Any, Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel
from pydantic_ai import Agent, BinaryContent, ModelRetry, RunContext, TextOutput, ToolFailed, ToolOutput
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agentool import (
    AgenToolConfig,
    AgenToolRegistry,
    AgenToolToolset,
    BaseOperationInput,
    ConfigurationError,
    DispatchOutputError,
    DispatchTargetError,
    InputValidationError,
    InvalidInputError,
    RoutingConfig,
    ToolFailedError,
    ToolRetryError,
    create_agentool,
    get_injector,
    get_registry,
)
from agentool.dispatch import (
    DISPATCH_PROVIDER,
    CommandRule,
    Dispatch,
    DispatchCapability,
    DispatchRecord,
    DispatchRequest,
    DispatchRule,
    JsonRule,
    PredicateRule,
    dispatch_record,
)


class CalcInput(BaseOperationInput):
    operation: Literal['add', 'neg', 'boom', 'retry', 'fail']
    a: int
    b: int = 0


async def add(a: int, b: int) -> int:
    return a + b


async def neg(a: int) -> int:
    return -a


async def boom(a: int) -> int:
    raise KeyError(a)


async def retry(a: int) -> int:
    raise ModelRetry('try again')


async def fail(a: int) -> int:
    raise ToolFailed(f'no {a}')


class WhoInput(BaseOperationInput):
    operation: Literal['who']


async def who(ctx: RunContext[str]) -> str:
    return f'deps={ctx.deps}'


class Sum(BaseModel):
    total: int


class SumInput(BaseOperationInput):
    operation: Literal['sum']
    a: int
    b: int


async def total(a: int, b: int) -> Sum:
    return Sum(total=a + b)


class Echo(BaseModel):
    total: int
    note: str = 'echo'


class Counting:
    """A `FunctionModel` function that counts its calls and answers with the last user prompt."""

    def __init__(self) -> None:
        self.calls = 0
        self.seen: list[list[ModelMessage]] = []

    async def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.calls += 1
        self.seen.append(list(messages))
        prompt = [p for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, UserPromptPart)]
        return ModelResponse(parts=[TextPart(f'model: {prompt[-1].content}')])


@pytest.fixture(autouse=True)
def agentools() -> None:
    routes = {'add': 'add', 'neg': 'neg', 'boom': 'boom', 'retry': 'retry', 'fail': 'fail'}
    create_agentool('calc', CalcInput, RoutingConfig(operation_map=routes), [add, neg, boom, retry, fail])
    create_agentool('whoami', WhoInput, RoutingConfig(operation_map={'who': 'who'}), [who], deps_type=str)
    create_agentool('summer', SumInput, RoutingConfig(operation_map={'sum': 'total'}), [total])


ADD = CommandRule(name='add', pattern=r'/add\s+(?P<a>\S+)\s+(?P<b>\S+)', agentool='calc', operation='add')


def make(
    *rules: DispatchRule, output_type: Any = str, **options: Any
) -> tuple[Agent[Any, Any], Counting, DispatchCapability]:
    model = Counting()
    capability = DispatchCapability(list(rules), **options)
    return Agent(FunctionModel(model), output_type=output_type, capabilities=[capability]), model, capability


# --- the core promise: dispatched turns make no model call, others make the usual one ---------------


async def test_a_dispatched_prompt_makes_no_model_call_and_no_model_request() -> None:
    agent, model, capability = make(JsonRule(agentool='calc'))
    result = await agent.run('{"operation": "add", "a": 5, "b": 3}')
    assert result.output == '8'
    assert model.calls == 0
    assert result.usage.requests == 0
    assert capability.counts.dispatched == 1
    assert capability.counts.sent_to_model == 0


async def test_free_text_reaches_the_model_once() -> None:
    agent, model, capability = make(JsonRule(agentool='calc'), ADD)
    result = await agent.run('what is five plus three?')
    assert result.output == 'model: what is five plus three?'
    assert model.calls == 1
    assert result.usage.requests == 1
    assert (capability.counts.dispatched, capability.counts.sent_to_model) == (0, 1)


PROMPTS = st.one_of(
    st.text(max_size=30),
    st.builds(lambda a, b: f'/add {a} {b}', st.integers(-99, 99), st.integers(-99, 99)),
    st.builds(lambda a: json.dumps({'operation': 'neg', 'a': a}), st.integers(-99, 99)),
    st.builds(lambda t: '{' + t, st.text(max_size=10)),
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(prompt=PROMPTS)
async def test_no_prompt_is_both_dispatched_and_sent_to_the_model(prompt: str) -> None:
    agent, model, capability = make(ADD, JsonRule(agentool='calc'))
    try:
        result = await agent.run(prompt)
    except InvalidInputError:  # a claimed turn with bad input raises: it reached neither
        assert model.calls == 0
        assert capability.counts.errors == 1
        return
    dispatched = [m for m in result.new_messages() if dispatch_record(m) is not None]
    assert len(dispatched) + model.calls == 1
    assert capability.counts.dispatched == len(dispatched)
    assert capability.counts.sent_to_model == model.calls


# --- rules: order, decline, invalid input ------------------------------------------------------


async def test_the_first_matching_rule_wins() -> None:
    negate = CommandRule(name='neg', pattern=r'/add\s+(?P<a>\S+)\s+\S+', agentool='calc', operation='neg')
    agent, _, capability = make(negate, ADD)
    assert (await agent.run('/add 2 3')).output == '-2'
    assert capability.counts.by_rule == {'neg': 1}
    agent, _, capability = make(ADD, negate)
    assert (await agent.run('/add 2 3')).output == '5'
    assert capability.counts.by_rule == {'add': 1}


async def test_a_rule_that_declines_passes_the_turn_to_the_next_one() -> None:
    def only_small(match: Any) -> dict[str, Any] | None:
        a = int(match['args'])
        return None if a > 10 else {'a': a}

    small = CommandRule(name='small', prefix='/neg', agentool='calc', operation='neg', parse=only_small)
    big = PredicateRule(
        name='big',
        agentool='calc',
        when=lambda r: r.prompt.startswith('/neg'),
        build=lambda r: {'operation': 'add', 'a': 100},
    )
    agent, model, capability = make(small, big)
    assert (await agent.run('/neg 3')).output == '-3'
    assert (await agent.run('/neg 30')).output == '100'
    assert capability.counts.by_rule == {'small': 1, 'big': 1}
    agent, model, _ = make(small)
    assert (await agent.run('/neg 30')).output == 'model: /neg 30'
    assert model.calls == 1


async def test_invalid_input_raises_the_agentools_typed_error_naming_the_rule_by_default() -> None:
    agent, model, capability = make(ADD)
    with pytest.raises(InputValidationError) as caught:
        await agent.run('/add two 3')
    assert caught.value.details['rule'] == 'add'
    assert caught.value.details['agentool'] == 'calc'
    assert model.calls == 0
    assert capability.counts.errors == 1


async def test_invalid_input_falls_through_to_the_model_when_the_rule_says_so() -> None:
    agent, model, capability = make(replace(ADD, on_invalid='fall_through'))
    assert (await agent.run('/add two 3')).output == 'model: /add two 3'
    assert model.calls == 1
    assert (capability.counts.fell_through, capability.counts.sent_to_model) == (1, 1)


@pytest.mark.parametrize('on_invalid', ['raise', 'fall_through'])
async def test_a_parser_that_refuses_the_text_is_invalid_input(on_invalid: Any) -> None:
    rule = CommandRule(
        prefix='/neg', agentool='calc', operation='neg', parse=lambda m: {'a': int(m['args'])}, on_invalid=on_invalid
    )
    agent, model, _ = make(rule)
    if on_invalid == 'raise':
        with pytest.raises(InvalidInputError, match="rule 'command:/neg'") as caught:
            await agent.run('/neg x')
        assert caught.value.details == {'agentool': 'calc', 'rule': 'command:/neg'}
    else:
        assert (await agent.run('/neg x')).output == 'model: /neg x'
    assert model.calls == (on_invalid == 'fall_through')


def test_a_command_rule_takes_exactly_one_of_pattern_and_prefix() -> None:
    with pytest.raises(ConfigurationError, match='exactly one of pattern= and prefix='):
        CommandRule(agentool='calc')
    with pytest.raises(ConfigurationError):
        CommandRule(agentool='calc', prefix='/a', pattern='/a')


def test_a_pattern_that_is_not_a_regex_is_a_typed_error_naming_it() -> None:
    with pytest.raises(
        ConfigurationError, match=r"CommandRule\(pattern='\('\) is not a valid regular expression"
    ) as caught:
        CommandRule(agentool='calc', pattern='(')
    assert caught.value.details['pattern'] == '('
    assert 'missing )' in caught.value.details['error']


@pytest.mark.parametrize(
    ('build', 'kwargs', 'option'),
    [
        (DispatchCapability, {'rules': 'notalist'}, 'rules'),
        (DispatchCapability, {'rules': [5]}, 'rules'),
        (DispatchCapability, {'rules': [JsonRule()], 'agentools': 'calc'}, 'agentools'),
        (DispatchCapability, {'rules': [JsonRule()], 'deps': 'model'}, 'deps'),
        (JsonRule, {'on_invalid': 'bogus'}, 'on_invalid'),
        (CommandRule, {'agentool': 'calc', 'prefix': '/a', 'on_invalid': 'ignore'}, 'on_invalid'),
        (CommandRule, {'agentool': 'calc', 'prefix': 5}, 'prefix'),
        (CommandRule, {'agentool': 'calc', 'pattern': 5}, 'pattern'),
        (PredicateRule, {'agentool': 'calc', 'when': 'always'}, 'when'),
        (CommandRule, {'agentool': 'calc', 'prefix': '/x', 'parse': 'p'}, 'parse'),
        (CommandRule, {'agentool': 'calc', 'prefix': '/x', 'operation': 3}, 'operation'),
        (CommandRule, {'agentool': 'calc', 'prefix': '/x', 'operation': ''}, 'operation'),
        (JsonRule, {'operation_field': ''}, 'operation_field'),
        (JsonRule, {'operation_field': 3}, 'operation_field'),
    ],
)
def test_bad_dispatch_settings_are_refused_at_construction(build: Any, kwargs: dict[str, Any], option: str) -> None:
    with pytest.raises(ConfigurationError, match=option) as caught:
        build(**kwargs)
    assert caught.value.details['option'] == option


async def test_a_prefix_command_without_a_parser_uses_the_operation_alone() -> None:
    agent, _, _ = make(CommandRule(prefix='/who', agentool='whoami', operation='who'))
    assert (await agent.run('/who', deps='ada')).output == 'deps=ada'


async def test_a_predicate_rule_sees_the_deps() -> None:
    rule = PredicateRule(agentool='whoami', when=lambda r: r.deps == 'admin', build=lambda r: {'operation': 'who'})
    agent, model, _ = make(rule)
    assert (await agent.run('anything', deps='admin')).output == 'deps=admin'
    assert (await agent.run('anything', deps='guest')).output == 'model: anything'
    assert model.calls == 1


async def test_a_custom_rule_is_a_subclass_returning_a_dispatch() -> None:
    class Shout(DispatchRule):
        def _default_name(self) -> str:
            return 'shout'

        def match(self, request: DispatchRequest, operations: Any) -> Dispatch | None:
            return Dispatch(agentool='calc', input={'operation': 'neg', 'a': 7}) if request.prompt.isupper() else None

    agent, _, capability = make(Shout())
    assert (await agent.run('HEY')).output == '-7'
    assert capability.counts.by_rule == {'shout': 1}


async def test_a_custom_rule_needs_only_match_and_is_named_after_its_class() -> None:
    class Always(DispatchRule):
        def match(self, request: DispatchRequest, operations: Any) -> Dispatch | None:
            return Dispatch(agentool='calc', input={'operation': 'neg', 'a': len(request.prompt)})

    class ShoutRule(DispatchRule):
        def match(self, request: DispatchRequest, operations: Any) -> Dispatch | None:
            return Dispatch(agentool='calc', input={'operation': 'neg', 'a': 1}) if request.prompt.isupper() else None

    agent, model, capability = make(ShoutRule(), Always())
    assert (await agent.run('HEY')).output == '-1'
    assert (await agent.run('hello')).output == '-5'
    assert capability.counts.by_rule == {'shout': 1, 'always': 1}
    assert Always(name='mine').label == 'mine'
    assert model.calls == 0


# --- JSON prompts ------------------------------------------------------------------------------


async def test_a_json_rule_without_agentool_finds_it_by_operation_or_by_name() -> None:
    agent, model, _ = make(JsonRule())
    assert (await agent.run('{"operation": "sum", "a": 1, "b": 2}')).output == '{"total":3}'
    assert (await agent.run('{"agentool": "calc", "operation": "neg", "a": 4}')).output == '-4'
    assert (await agent.run('{"operation": "unknown"}')).output == 'model: {"operation": "unknown"}'
    assert (await agent.run('{not json at all}')).output == 'model: {not json at all}'
    assert model.calls == 2


@pytest.mark.parametrize('named', ['null', '5', '["calc"]', '{"name": "calc"}'])
async def test_an_agentool_key_that_is_not_a_string_names_nothing_and_the_operation_decides(named: str) -> None:
    agent, model, _ = make(JsonRule())
    assert (await agent.run(f'{{"agentool": {named}, "operation": "neg", "a": 4}}')).output == '-4'
    # The key is dropped before the agentool sees the object: it is not an extra field.
    assert (await agent.run(f'{{"agentool": {named}, "operation": "unknown"}}')).output.startswith('model: ')
    assert model.calls == 1


async def test_an_operation_of_several_agentools_is_a_typed_error() -> None:
    create_agentool('calc2', SumInput, RoutingConfig(operation_map={'sum': 'add'}), [add])
    agent, model, _ = make(JsonRule())
    with pytest.raises(DispatchTargetError, match='several agentools') as caught:
        await agent.run('{"operation": "sum", "a": 1, "b": 2}')
    assert sorted(caught.value.details['candidates']) == ['calc2', 'summer']
    assert model.calls == 0
    agent, _, _ = make(JsonRule(), agentools=['calc2'])
    assert (await agent.run('{"operation": "sum", "a": 1, "b": 2}')).output == '3'


async def test_a_rule_naming_an_unregistered_agentool_is_a_typed_error() -> None:
    agent, _, _ = make(CommandRule(prefix='/x', agentool='calculator', operation='add'))
    with pytest.raises(DispatchTargetError, match="'calculator', which is not registered") as caught:
        await agent.run('/x')
    assert caught.value.details['target'] == 'calculator'


async def test_an_unregistered_target_suggests_close_spellings() -> None:
    agent, _, _ = make(CommandRule(prefix='/x', agentool='cacl', operation='add'))
    with pytest.raises(DispatchTargetError, match="did you mean 'calc'") as caught:
        await agent.run('/x')
    assert caught.value.details['suggestions'] == ['calc']


async def test_the_agentools_limit_applies_to_a_target_the_prompt_names() -> None:
    agent, model, capability = make(JsonRule(), agentools=['summer'])
    assert (await agent.run('{"agentool": "summer", "operation": "sum", "a": 1, "b": 2}')).output == '{"total":3}'
    with pytest.raises(DispatchTargetError, match="names agentool 'calc', which is not registered or not") as caught:
        await agent.run('{"agentool": "calc", "operation": "neg", "a": 4}')
    assert caught.value.details['target'] == 'calc'
    assert 'calc' not in caught.value.details['suggestions']
    with pytest.raises(DispatchTargetError, match="'nope', which is not registered"):
        await make(JsonRule())[0].run('{"agentool": "nope", "operation": "neg", "a": 4}')
    assert model.calls == 0
    assert capability.counts.errors == 1


async def test_a_named_target_needs_nothing_of_the_other_agentools() -> None:
    # Registered the guide's way, without its tools: this one cannot build a manager. A prompt
    # naming another agentool must not depend on it (it used to build every agentool's manager).
    get_registry().register('guide_style', AgenToolConfig(CalcInput, RoutingConfig(operation_map={'add': 'add'})))
    agent, model, _ = make(JsonRule())
    assert (await agent.run('{"agentool": "calc", "operation": "neg", "a": 4}')).output == '-4'
    assert model.calls == 0


async def test_an_unknown_name_in_the_agentools_limit_is_refused_naming_it() -> None:
    agent, model, _ = make(JsonRule(), agentools=['clac', 'summer'])
    with pytest.raises(ConfigurationError, match="'clac', which is not registered; did you mean 'calc'") as caught:
        await agent.run('{"operation": "sum", "a": 1, "b": 2}')
    assert caught.value.details['option'] == 'agentools'
    assert caught.value.details['suggestions'] == ['calc']
    assert model.calls == 0


# --- the answer fits the agent -----------------------------------------------------------------


async def test_the_answer_is_validated_into_the_agents_output_type() -> None:
    agent, _, _ = make(JsonRule(agentool='summer'), output_type=Echo)
    assert (await agent.run('{"operation": "sum", "a": 2, "b": 2}')).output == Echo(total=4)
    agent, _, _ = make(JsonRule(agentool='summer'), output_type=ToolOutput(Sum))
    assert (await agent.run('{"operation": "sum", "a": 2, "b": 2}')).output == Sum(total=4)
    agent, _, _ = make(JsonRule(agentool='calc'), output_type=[int, Sum])
    assert (await agent.run('{"operation": "neg", "a": 2}')).output == -2


async def test_an_answer_that_does_not_fit_is_a_typed_error_naming_the_rule_and_types() -> None:
    agent, _, capability = make(JsonRule(agentool='summer'), output_type=int)
    with pytest.raises(DispatchOutputError, match=r"rule 'json:summer'.*Sum.*output_type int") as caught:
        await agent.run('{"operation": "sum", "a": 2, "b": 2}')
    details = caught.value.details
    assert (details['rule'], details['operation']) == ('json:summer', 'sum')
    assert (details['output_type'], details['value_type']) == ('int', 'Sum')
    assert details['errors']
    assert capability.counts.errors == 1


async def test_an_untyped_agentools_json_text_is_parsed_into_a_typed_output() -> None:
    async def raw(a: int, b: int) -> Any:
        return {'total': a * b}

    create_agentool('raw', SumInput, RoutingConfig(operation_map={'sum': 'raw'}), [raw], output_type=None)
    agent, _, _ = make(JsonRule(agentool='raw'), output_type=Sum)
    assert (await agent.run('{"operation": "sum", "a": 2, "b": 5}')).output == Sum(total=10)


async def test_the_dispatched_turn_is_recognisable_in_the_history() -> None:
    agent, _, _ = make(ADD)
    result = await agent.run('/add 1 2')
    request, response = result.new_messages()
    assert isinstance(request, ModelRequest)
    (part,) = request.parts
    assert isinstance(part, UserPromptPart)
    assert part.content == '/add 1 2'
    assert isinstance(response, ModelResponse)
    assert response.provider_name == DISPATCH_PROVIDER
    assert response.model_name == 'agentool:calc'
    assert response.text == '3'
    record = dispatch_record(response)
    assert record is not None
    assert (record.rule, record.agentool, record.operation) == ('add', 'calc', 'add')
    assert dispatch_record(request) is None
    assert request.run_id == response.run_id == result.run_id
    stored = ModelMessagesTypeAdapter.validate_json(ModelMessagesTypeAdapter.dump_json(result.all_messages()))
    assert dispatch_record(stored[1]) == record  # the mark survives storing the history


async def test_message_history_continues_across_dispatched_and_model_turns() -> None:
    agent, model, _ = make(ADD)
    first = await agent.run('/add 1 2')
    second = await agent.run('and now?', message_history=first.all_messages())
    third = await agent.run('/add 3 4', message_history=second.all_messages())
    assert model.calls == 1
    seen = model.seen[0]  # the model saw the dispatched exchange
    assert [dispatch_record(m) is not None for m in seen] == [False, True, False]
    assert len(third.all_messages()) == 6
    assert len(third.new_messages()) == 2
    assert third.output == '7'


async def test_deps_reach_the_agentools_tools_or_come_from_the_injector() -> None:
    agent, _, _ = make(CommandRule(prefix='/who', agentool='whoami', operation='who'))
    assert (await agent.run('/who', deps='grace')).output == 'deps=grace'
    agent, _, _ = make(CommandRule(prefix='/who', agentool='whoami', operation='who'), deps='injector')
    with get_injector().override(whoami=Agent(FunctionModel(Counting()))):  # overrides apply to dispatched turns
        assert (await agent.run('/who', deps='grace')).output.startswith('model: ')


async def test_tool_errors_are_not_swallowed() -> None:
    agent, model, capability = make(JsonRule(agentool='calc'))
    with pytest.raises(KeyError):
        await agent.run('{"operation": "boom", "a": 1}')
    with pytest.raises(ToolRetryError):
        await agent.run('{"operation": "retry", "a": 1}')
    with pytest.raises(ToolFailedError, match='no 1'):
        await agent.run('{"operation": "fail", "a": 1}')
    assert model.calls == 0
    assert capability.counts.errors == 3


async def test_a_prompt_with_images_goes_to_the_model() -> None:
    agent, model, _ = make(JsonRule(agentool='calc'))
    image = BinaryContent(data=b'\x89PNG', media_type='image/png')
    await agent.run(['{"operation": "neg", "a": 1}', image])
    assert model.calls == 1


async def test_counts_reset() -> None:
    agent, _, capability = make(ADD)
    await agent.run('/add 1 1')
    await agent.run('hello')
    assert (capability.counts.dispatched, capability.counts.sent_to_model) == (1, 1)
    capability.reset_counts()
    assert capability.counts.dispatched == capability.counts.sent_to_model == 0
    assert capability.counts.by_rule == {}


# --- every way of running an agent ---------------------------------------------------------------


def test_run_sync() -> None:
    agent, model, _ = make(ADD)
    assert agent.run_sync('/add 2 2').output == '4'
    assert model.calls == 0


async def test_run_stream_gives_the_output_and_the_history() -> None:
    agent, model, _ = make(ADD)
    async with agent.run_stream('/add 2 5') as stream:
        assert await stream.get_output() == '7'
        messages = stream.all_messages()
    assert [dispatch_record(m) is not None for m in messages] == [False, True]
    async with agent.run_stream('/add 1 1', message_history=messages) as stream:
        assert [text async for text in stream.stream_text()] == ['2']
        assert len(stream.new_messages()) == 2
    assert model.calls == 0


async def test_iter_yields_no_node_and_holds_the_result() -> None:
    agent, model, _ = make(ADD)
    async with agent.iter('/add 2 5') as run:
        nodes = [node async for node in run]
        assert nodes == []
        assert run.result is not None
        assert run.result.output == '7'
    async with agent.iter('free text') as run:
        nodes = [node async for node in run]
    assert nodes
    assert model.calls == 1


async def test_run_stream_events_ends_with_the_result() -> None:
    agent, _, _ = make(ADD)
    async with agent.run_stream_events('/add 2 5') as events:
        seen = [event async for event in events]
    assert [type(e).__name__ for e in seen] == ['AgentRunResultEvent']


async def test_inside_an_agentool_toolset_agent() -> None:
    calls = 0

    async def llm(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        nonlocal calls
        calls += 1
        if calls == 1:
            return ModelResponse(parts=[ToolCallPart('calc_neg', {'a': 9})])
        return ModelResponse(parts=[TextPart('the model used the tool')])

    agent = Agent(
        FunctionModel(llm),
        toolsets=[AgenToolToolset(include=['calc.neg'])],
        capabilities=[DispatchCapability([ADD])],
    )
    assert (await agent.run('/add 4 4')).output == '8'
    assert calls == 0
    assert (await agent.run('negate nine please')).output == 'the model used the tool'
    assert calls == 2


async def test_mixed_concurrent_runs_do_not_cross_talk() -> None:
    agent, model, capability = make(
        ADD, PredicateRule(agentool='whoami', when=lambda r: r.prompt == '/who', build=lambda r: {'operation': 'who'})
    )

    async def one(i: int) -> None:
        if i % 3 == 0:
            assert (await agent.run(f'/add {i} 1')).output == str(i + 1)
        elif i % 3 == 1:
            assert (await agent.run('/who', deps=f'user{i}')).output == f'deps=user{i}'
        else:
            result = await agent.run(f'question {i}')
            assert result.output == f'model: question {i}'
            assert all(dispatch_record(m) is None for m in result.all_messages())

    await asyncio.gather(*(one(i) for i in range(301)))  # all in flight at once
    assert model.calls == 100
    assert capability.counts.dispatched == 201
    assert capability.counts.sent_to_model == 100
    assert capability.counts.by_rule == {'add': 101, 'predicate:<lambda>': 100}


async def test_an_output_spec_that_cannot_take_an_answer_is_refused_with_its_cause() -> None:
    agent, model, _ = make(JsonRule(agentool='summer'), output_type=TextOutput(_shout))
    with pytest.raises(DispatchOutputError, match='cannot take an agentool answer') as caught:
        await agent.run('{"operation": "sum", "a": 2, "b": 2}')
    assert isinstance(caught.value.__cause__, TypeError)  # why, kept for the traceback
    assert model.calls == 0


class Ticket(BaseModel):
    id: int
    status: str


@dataclass
class Desk:
    start: int = 0


class DeskInput(BaseOperationInput):
    operation: Literal['get', 'list']
    id: int = 1


async def get(ctx: RunContext[Desk], id: int) -> Ticket:
    return Ticket(id=id + ctx.deps.start, status='open')


async def list_(ctx: RunContext[Desk], id: int) -> list[Ticket]:
    return [Ticket(id=id, status='open')]


def _desk(
    output_type: Any = str, *, dispatch: DispatchCapability | None = None, deps_type: Any = Desk
) -> Agent[Any, Any]:
    """The `desk` agentool registered, and a model agent in front of it dispatching JSON prompts (or `dispatch`)."""
    routes = RoutingConfig(operation_map={'get': 'get', 'list': 'list_'})
    create_agentool('desk', DeskInput, routes, [get, list_], deps_type=Desk)
    dispatch = dispatch or DispatchCapability([JsonRule(agentool='desk')])
    return Agent(FunctionModel(_llm), deps_type=deps_type, output_type=output_type, capabilities=[dispatch])


def _llm(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[TextPart('from the model')])


def _shout(text: str) -> str:
    return text.upper()


def _summarise(ctx: RunContext[Any], ticket: Ticket) -> str:
    return f'ticket {ticket.id}'


@pytest.mark.parametrize('output_type', [TextOutput(_shout), _summarise], ids=['TextOutput', 'function'])
def test_an_output_function_cannot_take_a_dispatched_answer(output_type: Any) -> None:
    """An output function is called by the model's run only: a dispatched answer is refused, not passed as text."""
    agent = _desk(output_type)
    with pytest.raises(DispatchOutputError, match='output function') as caught:
        agent.run_sync('{"operation": "get"}', deps=Desk())
    assert caught.value.details['rule'] == 'json:desk'
    assert caught.value.details['operation'] == 'get'


def test_the_output_error_names_a_generic_output_type_in_full() -> None:
    agent = _desk(list[Ticket])
    with pytest.raises(DispatchOutputError) as caught:
        agent.run_sync('{"operation": "get"}', deps=Desk())
    assert caught.value.details['output_type'] == 'list[Ticket]'
    assert caught.value.details['value_type'] == 'Ticket'
    assert agent.run_sync('{"operation": "list"}', deps=Desk()).output == [Ticket(id=1, status='open')]


def test_a_run_without_deps_lets_the_injector_build_the_agentools_deps() -> None:
    """As the agentool's own `agent.run(deps=None)`: the tool does not get `None` for its declared deps."""
    agent = _desk(Ticket, deps_type=type(None))
    assert agent.run_sync('{"operation": "get", "id": 3}').output == Ticket(id=3, status='open')
    dispatch = DispatchCapability([JsonRule(agentool='desk')])
    typed = Agent(FunctionModel(_llm), deps_type=Desk, output_type=Ticket, capabilities=[dispatch])
    assert typed.run_sync('{"operation": "get", "id": 3}', deps=Desk(start=10)).output.id == 13


def test_a_custom_rule_returning_something_else_is_a_configuration_error() -> None:
    class Loose(DispatchRule):
        def match(self, request: DispatchRequest, operations: Any) -> Any:
            return {'agentool': 'desk', 'input': {'operation': 'get'}}

    dispatch = DispatchCapability([Loose()])
    agent = _desk(dispatch=dispatch)
    with pytest.raises(ConfigurationError, match='must return a Dispatch or None') as caught:
        agent.run_sync('anything', deps=Desk())
    assert caught.value.details['rule'] == 'loose'
    assert dispatch.counts.errors == 1


def test_stream_and_iter_of_a_dispatched_turn() -> None:
    agent = _desk(Ticket)

    async def scenario() -> None:
        async with agent.run_stream('{"operation": "get", "id": 2}', deps=Desk()) as stream:
            assert await stream.get_output() == Ticket(id=2, status='open')
        async with agent.iter('{"operation": "get", "id": 5}', deps=Desk()) as run:
            assert [node async for node in run] == []
            assert run.result is not None
            assert run.result.output.id == 5
        async with agent.run_stream_events('{"operation": "get", "id": 6}', deps=Desk()) as events:
            kinds = [type(event).__name__ async for event in events]
        assert kinds == ['AgentRunResultEvent']

    asyncio.run(scenario())


def test_dispatch_record_survives_a_history_saved_as_json() -> None:
    result = _desk().run_sync('{"operation": "get"}', deps=Desk())
    saved = ModelMessagesTypeAdapter.validate_json(ModelMessagesTypeAdapter.dump_json(result.all_messages()))
    assert [dispatch_record(m) for m in saved] == [
        None,
        DispatchRecord(rule='json:desk', agentool='desk', operation='get'),
    ]


def test_agents_built_per_request_do_not_grow_the_output_validator_cache_without_end() -> None:
    from agentool.dispatch import _answer  # pyright: ignore[reportPrivateUsage]

    routes = RoutingConfig(operation_map={'get': 'get', 'list': 'list_'})
    create_agentool('desk', DeskInput, routes, [get, list_], deps_type=Desk)
    for _ in range(300):  # a new list spec each time, as an agent built per request has
        capability = DispatchCapability([JsonRule(agentool='desk')])
        agent = Agent(FunctionModel(_llm), deps_type=Desk, output_type=[Ticket, str], capabilities=[capability])
        assert agent.run_sync('{"operation": "get"}', deps=Desk()).output == Ticket(id=1, status='open')
    assert len(_answer._ADAPTERS) <= 256  # pyright: ignore[reportPrivateUsage]


class DraftInput(BaseOperationInput):
    operation: Literal['draft']


def test_an_agentool_that_cannot_run_does_not_break_dispatch_to_the_others(registry: AgenToolRegistry) -> None:
    """Registered for its docs only (no tools), it is refused when a prompt picks it, and only then."""
    agent = _desk(dispatch=DispatchCapability([JsonRule()]))
    registry.register('draft', AgenToolConfig(DraftInput, RoutingConfig(operation_map={'draft': 'nope'})))
    assert json.loads(agent.run_sync('{"operation": "get"}', deps=Desk()).output) == {'id': 1, 'status': 'open'}
    assert agent.run_sync('{"note": "no operation"}', deps=Desk()).output == 'from the model'
    with pytest.raises(ConfigurationError, match="'draft'"):
        agent.run_sync('{"operation": "draft"}', deps=Desk())
