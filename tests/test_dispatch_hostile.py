"""Dispatch against hostile prompts and awkward answers: size first, bounded errors, answers as on every surface.

A prompt a rule would claim is measured before it is parsed or matched; an error quotes at most a
bounded part of what the prompt held; a dispatched answer fits the agent's output type exactly
when a model's answer with the same data would, and a text agent never gets `Infinity` as text.

Inputs JSON cannot carry (a lone surrogate in a prompt, from text decoded with `surrogateescape`),
an input a rule builds over `max_input_bytes`, a model instance a rule builds: a claimed turn ends
as the agentool itself ends for that input (its typed error, with `details['rule']`, or the model
when the rule falls through), and `JsonRule` declines text that cannot be JSON, as it declines any
other text that is not. The same bad input refused alike on every other surface is
tests/test_hostile_input.py, where dispatch is one surface.

Last, dispatch fuzzed with the hostile families (megabyte names, control characters, non-finite
numbers, huge integers, deep nesting, oversized payloads) in JSON prompts, commands and agentool
answers, for a text agent and a typed one: every turn ends with an output or an `AgenToolError`
whose message and details stay within a fixed bound (`make fuzz`: more examples, bigger payloads).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import tracemalloc
from collections.abc import Iterator
from typing import Any, Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel
from pydantic_ai import Agent, NativeOutput, PromptedOutput, ToolOutput
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from typing_extensions import TypedDict

from agentool import (
    AgenToolError,
    BaseOperationInput,
    DispatchError,
    DispatchTargetError,
    InputTooLargeError,
    InputValidationError,
    InvalidInputError,
    OutputError,
    RoutingConfig,
    create_agentool,
    get_injector,
    use_registry,
)
from agentool.dispatch import CommandRule, Dispatch, DispatchCapability, DispatchRule, JsonRule, PredicateRule
from agentool.errors import clip
from tests.agentools import NotesInput, ping, say

MB = 1024 * 1024
HUGE = 30 * MB
"""Tens of megabytes: parsing this much costs seconds and hundreds of MB; refusing it must not."""
LONG = 2 * MB
"""Over every limit here, for prompts that reach the model (whose own handling costs their size)."""


class BigInput(BaseOperationInput):
    operation: Literal['shout']
    text: str = ''


class Ticket(BaseModel):
    id: int
    status: str


class AnswerInput(BaseOperationInput):
    operation: Literal['ticket', 'odd', 'tickets']


async def shout(text: str) -> str:
    return text.upper()


async def ticket() -> Ticket:
    return Ticket(id=7, status='open')


async def odd() -> list[float]:
    return [math.inf, math.nan]


async def tickets() -> list[Ticket]:
    return [Ticket(id=1, status='open'), Ticket(id=2, status='closed')]


@pytest.fixture(autouse=True)
def agentools() -> None:
    routes = RoutingConfig(operation_map={'say': 'say', 'ping': 'ping'})
    create_agentool('notes', NotesInput, routes, [say, ping], max_input_bytes=1000)
    create_agentool('big', BigInput, RoutingConfig(operation_map={'shout': 'shout'}), [shout], max_input_bytes=MB)
    answers = RoutingConfig(operation_map={'ticket': 'ticket', 'odd': 'odd', 'tickets': 'tickets'})
    create_agentool('answers', AnswerInput, answers, [ticket, odd, tickets])


class Model:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.calls += 1
        return ModelResponse(parts=[TextPart('model')])


def make(*rules: DispatchRule, output_type: Any = str) -> tuple[Agent[None, Any], Model, DispatchCapability]:
    model = Model()
    capability = DispatchCapability(list(rules))
    return Agent(FunctionModel(model), output_type=output_type, capabilities=[capability]), model, capability


def not_json(size: int) -> str:
    """Braces around text that is no JSON at all: refused as too large only if never parsed
    (parsed, it would be declined as free text and reach the model)."""
    return '{' + 'x' * size + '}'


# --- size first -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ('rule', 'limit'),
    [(JsonRule(agentool='notes'), 1000), (JsonRule(), MB)],
    ids=['named', 'by-operation'],
)
async def test_a_json_prompt_over_the_limit_is_refused_before_it_is_parsed(rule: JsonRule, limit: int) -> None:
    agent, model, capability = make(rule)
    with pytest.raises(InputTooLargeError) as caught:
        await agent.run(not_json(HUGE))
    assert caught.value.details == {
        **({'agentool': 'notes'} if rule.agentool else {}),
        'rule': rule.label,
        'size': HUGE + 2,
        'limit': limit,
    }
    assert len(caught.value.message) < 300
    assert (model.calls, capability.counts.errors) == (0, 1)


async def test_refusing_tens_of_megabytes_of_json_costs_no_more_than_its_size() -> None:
    # A valid object this size took seconds and ~20x its size in memory to parse before the check.
    agent, model, _ = make(JsonRule())
    prompt = '{"operation": "shout", "text": "' + 'y' * HUGE + '"}'
    tracemalloc.start()
    try:
        with pytest.raises(InputTooLargeError):
            await agent.run(prompt)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < HUGE // 4
    assert model.calls == 0


async def test_json_rule_without_a_target_measures_against_the_largest_candidate_limit() -> None:
    # Over `notes`' limit but within `big`'s: parsed, routed, and refused by the agentool it names.
    agent, _, _ = make(JsonRule())
    assert (await agent.run('{"operation": "shout", "text": "' + 'a' * 5000 + '"}')).output == 'A' * 5000
    with pytest.raises(InputTooLargeError) as caught:
        await agent.run('{"operation": "say", "text": "' + 'a' * 5000 + '"}')
    assert caught.value.details['agentool'] == 'notes'


async def test_an_oversized_json_prompt_falls_through_unparsed_when_the_rule_says_so() -> None:
    agent, model, capability = make(JsonRule(agentool='notes', on_invalid='fall_through'))
    assert (await agent.run(not_json(LONG))).output == 'model'
    assert (model.calls, capability.counts.fell_through) == (1, 1)


async def test_free_text_no_rule_claims_is_not_agentools_to_limit() -> None:
    agent, model, _ = make(JsonRule(), CommandRule(prefix='/say', agentool='notes', operation='say'))
    assert (await agent.run('x' * LONG)).output == 'model'
    assert model.calls == 1


async def test_a_command_pattern_never_runs_on_more_than_the_limit() -> None:
    # `(\w+\s?)+` backtracks exponentially on a near-miss; on a prompt over the agentool's limit
    # it is never run (this one would take longer than the test suite).
    rule = CommandRule(pattern=r'/say (?P<text>(\w+\s?)+)', agentool='notes', operation='say')
    agent, model, _ = make(rule)
    assert (await agent.run('/say ' + 'a' * 2000 + '!')).output == 'model'
    assert (await agent.run('/say ' + 'a b ' * (LONG // 4))).output == 'model'
    assert model.calls == 2
    assert (await agent.run('/say hello world')).output == 'hello world'


async def test_a_long_command_with_a_prefix_rules_prefix_is_refused_as_too_large() -> None:
    rule = CommandRule(prefix='/say', agentool='notes', parse=lambda m: {'operation': 'say', 'text': m['args']})
    agent, model, _ = make(rule)
    with pytest.raises(InputTooLargeError) as caught:
        await agent.run('/say ' + 'z' * HUGE)
    assert caught.value.details == {'agentool': 'notes', 'rule': 'command:/say', 'size': HUGE + 5, 'limit': 1000}
    assert (await agent.run('/sayz' + 'z' * LONG)).output == 'model'  # not the prefix: declined
    assert model.calls == 1


# --- bounded errors ------------------------------------------------------------------------------


async def test_an_unknown_megabyte_agentool_name_is_not_repeated_in_full() -> None:
    name = 'n' * 1_000_000
    agent, _, _ = make(JsonRule())
    with pytest.raises(DispatchTargetError) as caught:
        await agent.run('{"agentool": "' + name + '", "operation": "ping"}')
    error = caught.value
    assert len(error.message) < 2000
    assert error.details['target'] == clip(name)
    assert error.details['target_length'] == len(name)
    assert len(repr(error.details)) < 2000


class Named(DispatchRule):
    def match(self, request: Any, operations: Any) -> Dispatch | None:
        return Dispatch(agentool='m' * 1_000_000, input={'operation': 'ping'})


async def test_a_rule_naming_a_megabyte_agentool_gets_a_bounded_error() -> None:
    agent, _, _ = make(Named())
    with pytest.raises(DispatchTargetError) as caught:
        await agent.run('anything')
    assert len(caught.value.message) < 2000
    assert caught.value.details['target_length'] == 1_000_000
    assert len(repr(caught.value.details)) < 2000


async def test_a_parse_error_quoting_the_whole_prompt_is_cut() -> None:
    def refuse(match: Any) -> Any:
        raise ValueError(f'cannot read {match.string}')

    agent, _, _ = make(CommandRule(pattern=r'/say .*', agentool='big', parse=refuse))
    with pytest.raises(InvalidInputError) as caught:
        await agent.run('/say ' + 'q' * 500_000)
    assert len(caught.value.message) < 2000


# --- "agentool" key ------------------------------------------------------------------------------


@pytest.mark.parametrize('held', ['null', '3', '[]', '{}', 'true'])
async def test_json_rule_routes_the_object_without_its_agentool_key_whatever_it_holds(held: str) -> None:
    agent, model, _ = make(JsonRule())
    result = await agent.run(f'{{"agentool": {held}, "operation": "say", "text": "hi"}}')
    assert result.output == 'hi'
    assert model.calls == 0


async def test_with_a_named_target_the_agentool_key_is_an_ordinary_field() -> None:
    agent, _, _ = make(JsonRule(agentool='notes'))
    with pytest.raises(InputValidationError) as caught:
        await agent.run('{"agentool": "notes", "operation": "say", "text": "hi"}')
    assert ['agentool'] in [e['loc'] for e in caught.value.errors]


# --- prefix commands with arguments -------------------------------------------------------------


async def test_a_prefix_command_without_parse_refuses_arguments_it_would_drop() -> None:
    agent, model, _ = make(CommandRule(prefix='/ping', agentool='notes', operation='ping'))
    assert (await agent.run('/ping')).output == 'pong'
    with pytest.raises(InvalidInputError) as caught:
        await agent.run('/ping now please')
    assert caught.value.details == {'agentool': 'notes', 'rule': 'command:/ping'}
    assert "'/ping' takes no arguments" in caught.value.message
    assert "'now please'" in caught.value.message
    assert model.calls == 0


async def test_a_prefix_command_with_arguments_falls_through_when_the_rule_says_so() -> None:
    rule = CommandRule(prefix='/ping', agentool='notes', operation='ping', on_invalid='fall_through')
    agent, model, capability = make(rule)
    assert (await agent.run('/ping now please')).output == 'model'
    assert (model.calls, capability.counts.fell_through) == (1, 1)


# --- answers as on every surface -----------------------------------------------------------------


ODD = CommandRule(prefix='/odd', agentool='answers', operation='odd')
TICKET = CommandRule(prefix='/ticket', agentool='answers', operation='ticket')
TICKETS = CommandRule(prefix='/tickets', agentool='answers', operation='tickets')


async def test_a_non_finite_answer_for_a_text_agent_is_an_output_error() -> None:
    agent, _, _ = make(ODD)
    with pytest.raises(OutputError) as caught:
        await agent.run('/odd')
    assert caught.value.details['reason'] == 'non_finite_number'
    assert caught.value.details['rule'] == 'command:/odd'
    assert caught.value.details['operation'] == 'odd'


async def test_a_non_finite_answer_for_a_float_list_agent_is_the_floats() -> None:
    # A structured output carries them as pydantic reads them (as a model run's output does).
    agent, _, _ = make(ODD, output_type=list[float])
    output = (await agent.run('/odd')).output
    assert output[0] == math.inf
    assert math.isnan(output[1])


@dataclasses.dataclass
class TicketData:
    id: int
    status: str


class TicketDict(TypedDict):
    id: int
    status: str


class Other(BaseModel):
    note: str


@pytest.mark.parametrize(
    ('output_type', 'expected'),
    [
        (TicketData, TicketData(id=7, status='open')),
        (TicketDict, {'id': 7, 'status': 'open'}),
        (dict[str, Any], {'id': 7, 'status': 'open'}),
        (Ticket, Ticket(id=7, status='open')),
        (Other | TicketData, TicketData(id=7, status='open')),
        ([Other, TicketData], TicketData(id=7, status='open')),
        (ToolOutput(TicketData), TicketData(id=7, status='open')),
        (NativeOutput(TicketDict), {'id': 7, 'status': 'open'}),
        (PromptedOutput(dict[str, Any]), {'id': 7, 'status': 'open'}),
    ],
    ids=['dataclass', 'typeddict', 'dict', 'model', 'union', 'list', 'tool', 'native', 'prompted'],
)
async def test_an_answer_fits_every_output_type_its_data_fits(output_type: Any, expected: Any) -> None:
    agent, model, _ = make(TICKET, output_type=output_type)
    assert (await agent.run('/ticket')).output == expected
    assert model.calls == 0


async def test_a_list_answer_fits_a_list_of_dataclasses() -> None:
    agent, _, _ = make(TICKETS, output_type=list[TicketData])
    assert (await agent.run('/tickets')).output == [TicketData(1, 'open'), TicketData(2, 'closed')]


# --- inputs JSON cannot carry, and inputs a rule builds --------------------------------------------


LONE = '\ud800'
"""A lone surrogate: a valid Python `str` character that UTF-8, hence JSON text, cannot hold."""


async def refusal(input: Any) -> InvalidInputError:
    """The typed error the agentool itself gives for `input`, through the injector."""
    with pytest.raises(InvalidInputError) as caught:
        await get_injector().call('notes', input)
    return caught.value


@pytest.mark.parametrize('rule', [JsonRule(agentool='notes'), JsonRule()], ids=['named', 'by-operation'])
async def test_a_json_rule_declines_a_prompt_with_a_lone_surrogate(rule: JsonRule) -> None:
    # No JSON text holds a lone surrogate: like any other text that is not JSON, the model gets it.
    agent, model, capability = make(rule)
    result = await agent.run(f'{{"operation": "say", "text": "{LONE}"}}')
    assert result.output == 'model'
    assert model.calls == 1
    assert (capability.counts.dispatched, capability.counts.sent_to_model, capability.counts.errors) == (0, 1, 0)


async def test_a_predicate_rule_passing_such_a_prompt_on_gets_the_agentools_error() -> None:
    prompt = f'{{"operation": "say", "text": "{LONE}"}}'
    agent, model, _ = make(PredicateRule(name='all', agentool='notes', when=lambda r: True))
    expected = await refusal(prompt)
    with pytest.raises(InputValidationError) as caught:
        await agent.run(prompt)
    assert type(caught.value) is type(expected)
    assert caught.value.message == expected.message
    assert caught.value.details == {**expected.details, 'rule': 'all'}
    assert model.calls == 0


SAY = r'/say (?P<text>.*)'


async def test_a_command_capturing_a_lone_surrogate_gets_the_agentools_error_naming_the_rule() -> None:
    agent, model, capability = make(CommandRule(name='say', pattern=SAY, agentool='notes', operation='say'))
    expected = await refusal({'text': LONE, 'operation': 'say'})
    with pytest.raises(InvalidInputError) as caught:
        await agent.run(f'/say {LONE}')
    assert type(caught.value) is type(expected)
    assert caught.value.message == expected.message
    assert caught.value.details == {**expected.details, 'rule': 'say'}
    assert (model.calls, capability.counts.errors) == (0, 1)


async def test_a_command_capturing_a_lone_surrogate_falls_through_when_the_rule_says_so() -> None:
    rule = CommandRule(pattern=SAY, agentool='notes', operation='say', on_invalid='fall_through')
    agent, model, capability = make(rule)
    assert (await agent.run(f'/say {LONE}')).output == 'model'
    assert (model.calls, capability.counts.fell_through) == (1, 1)


@pytest.mark.parametrize('on_invalid', ['raise', 'fall_through'])
async def test_an_input_a_rule_builds_over_max_input_bytes_is_invalid_input(on_invalid: Any) -> None:
    # The size is the agentool's first check on every path; a dict built by a rule is no exception.
    # The prompt itself is within the limit (a longer one the pattern never reads: it is declined),
    # the JSON input built from it is not.
    agent, model, capability = make(
        CommandRule(name='say', pattern=SAY, agentool='notes', operation='say', on_invalid=on_invalid)
    )
    long = 'y' * 990
    if on_invalid == 'raise':
        expected = await refusal({'text': long, 'operation': 'say'})
        with pytest.raises(InputTooLargeError) as caught:
            await agent.run(f'/say {long}')
        assert caught.value.message == expected.message
        assert caught.value.details == {**expected.details, 'rule': 'say'}
    else:
        assert (await agent.run(f'/say {long}')).output == 'model'
        assert capability.counts.fell_through == 1
    assert model.calls == (on_invalid == 'fall_through')
    assert (await agent.run('/say short')).output == 'short'


async def test_a_model_a_rule_builds_is_checked_like_any_other_input() -> None:
    # `say` needs `text`, which the schema leaves optional: a model instance without it is refused
    # as the injector refuses it, not passed on unchecked.
    built = NotesInput(operation='say')
    rule = PredicateRule(name='model', agentool='notes', when=lambda r: True, build=lambda r: built)
    agent, model, _ = make(rule)
    expected = await refusal(built)
    with pytest.raises(InputValidationError) as caught:
        await agent.run('anything')
    assert caught.value.message == expected.message
    assert caught.value.details['rule'] == 'model'
    assert model.calls == 0


HEAVY = os.environ.get('AGENTOOL_FUZZ') == '1'
"""`make fuzz`: many more examples and bigger payloads."""
EXAMPLES = 1_000 if HEAVY else 50
LIMIT = 4096
"""Every agentool's `max_input_bytes` here, so that a short run's payloads can be over all of them."""
BIG = 24 * 1024 * 1024 if HEAVY else 4 * LIMIT
"""An oversized payload; a turn no rule claims hands it to the model, whose handling costs its size."""
MESSAGE_BOUND = 2_000
DETAILS_BOUND = 4_000


class AnswersInput(BaseOperationInput):
    operation: Literal['inf', 'nan', 'huge', 'deep', 'name']


def _deep(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


ANSWERS: dict[str, Any] = {
    'inf': [math.inf, -math.inf],
    'nan': {'x': math.nan},
    'huge': 10**5000,
    'deep': _deep(1_000),
    'name': 'n' * 1024 * 1024,
}


async def answer(operation: str) -> Any:
    return ANSWERS[operation]


def _model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[TextPart('model')])


@pytest.fixture
def agents() -> Iterator[list[Agent[None, Any]]]:
    """A text agent and a typed one, with the same rules; built once for all examples (stateless).

    In a registry of their own: `notes` and `answers` here differ from the other tests' (a common limit).
    """
    with use_registry():
        create_agentool(
            'notes',
            NotesInput,
            RoutingConfig(operation_map={'say': 'say', 'ping': 'ping'}),
            [say, ping],
            max_input_bytes=LIMIT,
        )
        routes = dict.fromkeys(ANSWERS, 'answer')
        create_agentool(
            'answers',
            AnswersInput,
            RoutingConfig(operation_map=routes),
            [answer],
            max_input_bytes=LIMIT,
        )
        rules = [
            JsonRule(),
            CommandRule(pattern=r'/say (?P<text>.+)', agentool='notes', operation='say'),
            CommandRule(prefix='/ping', agentool='notes', operation='ping'),
            CommandRule(pattern=r'/answer (?P<operation>inf|nan|huge|deep|name)', agentool='answers'),
        ]
        output_types: list[Any] = [str, list[Any] | dict[str, Any] | int | str]
        yield [
            Agent(
                FunctionModel(_model),
                deps_type=type(None),
                output_type=output_type,
                capabilities=[DispatchCapability(rules)],
            )
            for output_type in output_types
        ]


controls = st.text(alphabet=st.characters(categories=['Cc', 'Cs', 'Zl', 'Zp']), min_size=1, max_size=12)
sizes = st.sampled_from([LIMIT + 1, BIG])
depths = st.sampled_from([100, 1_000, 100_000 if HEAVY else 10_000])
non_finite = st.sampled_from(['NaN', 'Infinity', '-Infinity', '1e400', '-1e400'])
huge_ints = st.integers(min_value=400, max_value=LIMIT - 100).map(lambda n: '9' * n)


def _object(**fields: str) -> str:
    """A JSON object from fields given as JSON text (so non-JSON numbers can be written)."""
    return '{' + ', '.join(f'{json.dumps(k)}: {v}' for k, v in fields.items()) + '}'


prompts = st.one_of(
    # megabyte names
    sizes.map(lambda n: _object(agentool=json.dumps('n' * n), operation='"ping"')),
    sizes.map(lambda n: _object(operation=json.dumps('o' * n))),
    # control characters (and lone surrogates) in names, fields and commands
    controls.map(lambda c: _object(agentool=json.dumps(c), operation='"ping"')),
    controls.map(lambda c: _object(operation='"say"', text=json.dumps(c))),
    controls.map(lambda c: _object(operation=json.dumps(c))),
    controls.map(lambda c: f'/say {c}x'),
    controls.map(lambda c: f'/ping {c}x'),
    # non-finite numbers and huge integers, as fields and as the "agentool" key
    non_finite.map(lambda v: _object(operation='"say"', text=v)),
    non_finite.map(lambda v: _object(agentool=v, operation='"ping"')),
    huge_ints.map(lambda v: _object(operation='"say"', text=v)),
    huge_ints.map(lambda v: _object(agentool=v, operation='"ping"')),
    # deep nesting
    depths.map(lambda d: _object(operation='"say"', text='[' * d + ']' * d)),
    depths.map(lambda d: _object(agentool='{"a":' * d + '1' + '}' * d, operation='"ping"')),
    depths.map(lambda d: '{' * d + '}' * d),
    # oversized payloads: JSON, commands, free text
    sizes.map(lambda n: _object(operation='"say"', text=json.dumps('x' * n))),
    sizes.map(lambda n: '/say ' + 'x' * n),
    sizes.map(lambda n: '/ping ' + 'x' * n),
    sizes.map(lambda n: '{' + 'x' * n + '}'),
    # answers JSON (or a text output) cannot carry, or that are merely large
    st.sampled_from(sorted(ANSWERS)).map(lambda op: f'/answer {op}'),
)


async def _turn(agent: Agent[None, Any], prompt: str) -> AgenToolError | None:
    """The typed error the turn ends with, or `None` when it ends with an output."""
    try:
        result = await agent.run(prompt)
    except AgenToolError as error:
        return error
    assert result.output is not None
    return None


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(prompt=prompts)
async def test_every_hostile_turn_is_an_output_or_a_bounded_typed_error(
    agents: list[Agent[None, Any]], prompt: str
) -> None:
    for agent in agents:
        error = await _turn(agent, prompt)
        if error is None:
            continue
        assert len(str(error)) <= MESSAGE_BOUND, (type(error).__name__, str(error)[:300])
        if isinstance(error, DispatchError | InputTooLargeError):
            # Dispatch's own errors. An agentool's validation errors carry pydantic's error list, whose
            # `input` values are for the bound shared by every surface (`agentool.errors`) to cut.
            assert len(repr(error.details)) <= DETAILS_BOUND, (type(error).__name__, repr(error.details)[:300])
