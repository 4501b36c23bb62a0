"""Hostile and oversized input on every surface: one matrix, what a matrix cannot hold, then fuzzing.

The matrix: each input in `CASES` through each surface of tests/surface_callers.py must be refused
exactly when `injector.call` refuses it (same error class, message and details where the surface hands
them over), within a fixed bound, and never reach the tool. Size is checked first, before anything
parses the input (30 MB of nesting would take seconds and gigabytes to parse).

Then per-agentool limits, non-finite numbers, unreadable JSON and dispatch; then fuzzing, short by
default (`AGENTOOL_FUZZ=1`, `make fuzz`, runs more; `-s` shows each surface's counts).
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import math
import os
import time
import tracemalloc
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from datetime import date
from enum import StrEnum
from typing import Annotated, Any, Literal

import anyio
import anyio.to_thread
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client, MCPError
from pydantic import BaseModel, Field, JsonValue, ValidationError
from pydantic_ai import Agent, NativeOutput, PromptedOutput, RunContext, ToolOutput, capture_run_messages
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel
from pydantic_ai.toolsets import ToolsetTool
from pydantic_ai.usage import RunUsage
from pydantic_core import from_json, to_json
from typing_extensions import TypedDict

from agentool import (
    AgenToolError,
    AgenToolToolset,
    AllowInfNan,
    BaseOperationInput,
    DispatchError,
    DispatchTargetError,
    InputTooLargeError,
    InputValidationError,
    InvalidInputError,
    InvalidJSONError,
    NotAnObjectError,
    OutputError,
    RoutingConfig,
    UnknownOperationError,
    create_agentool,
    get_injector,
    get_registry,
    use_registry,
)
from agentool.cli import main
from agentool.core.injector import AgenToolInjector
from agentool.core.manager import MANAGER_TOOL_NAME
from agentool.dispatch import CommandRule, Dispatch, DispatchCapability, DispatchRule, JsonRule, PredicateRule
from agentool.errors import DriftError, clip
from agentool.mcp import create_mcp_server
from agentool.mcp_http import HttpOptions
from agentool.testing import AgentDouble, Call, Output, OutputFrom, Script
from agentool.testing.strategies import invalid_inputs, valid_inputs
from examples.calculator import create_calculator
from examples.sessions import create_sessions
from examples.storage import MEMORY, SQLiteStore, create_storage
from tests.agentools import NotesInput, agentool, ping, say
from tests.mcp_asgi import open_session, running, send
from tests.surface_callers import ARGS_SURFACES, TEXT_SURFACES, Outcome, Refused, llm_tool_call
from tests.todo_agentool import create_todo

LIMIT = 4096
"""The agentools' `max_input_bytes`: room for nesting deeper than pydantic parses, small to exceed."""
MESSAGE_BOUND = 2_000
MCP_BOUND = 4_000
MB = 1024 * 1024

HEAVY = os.environ.get('AGENTOOL_FUZZ') == '1'
"""`make fuzz`: many more examples, bigger payloads, deeper nesting."""

ran: list[str] = []
"""The tool calls made, in order: bad input makes none."""


class SumInput(BaseOperationInput):
    operation: Literal['add', 'div']
    a: float
    b: float
    note: str = ''


async def add(a: float, b: float, note: str = '') -> float:
    ran.append('add')
    return a + b


async def div(a: float, b: float, note: str = '') -> float:
    ran.append('div')
    return a / b


SUM_ROUTES = RoutingConfig(operation_map={'add': 'add', 'div': 'div'})


@pytest.fixture
def sums() -> None:
    """`sum` and `sum_graph` (its graph run), limited to `LIMIT`; no tool call made yet."""
    ran.clear()
    create_agentool('sum', SumInput, SUM_ROUTES, [add, div], max_input_bytes=LIMIT)
    create_agentool('sum_graph', SumInput, SUM_ROUTES, [add, div], max_input_bytes=LIMIT, lean=False)


def sized(size: int, char: str = 'x') -> str:
    """A valid prompt of exactly `size` UTF-8 bytes, compact (its dict's compact JSON is as long)."""
    base = len(to_json({'operation': 'add', 'a': 1, 'b': 2, 'note': ''}))
    count, rest = divmod(size - base, len(char.encode()))
    return to_json({'operation': 'add', 'a': 1, 'b': 2, 'note': char * count + 'x' * rest}).decode()


def padded(prompt: str) -> str:
    """`prompt` (ending in a string's opening quote) with that string filled to one byte over the limit."""
    return prompt + 'x' * (LIMIT + 1 - len(prompt.encode()) - 2) + '"}'


HUGE = '{"operation": "add", "a": 1, "b": ' + '[' * 15_000_000 + ']' * 15_000_000 + '}'
"""30 MB of nesting: quick to build, slow and memory-hungry to parse (what a hostile caller sends)."""
DEEP = '{"operation": "add", "a": 1, "b": ' + '[' * 300 + ']' * 300 + '}'
"""Deeper than pydantic's parser goes, within the limit."""


@dataclass(frozen=True)
class Case:
    prompt: str
    kind: type[AgenToolError] | None
    """The error every surface refuses it with (`None`: every surface answers)."""
    details: dict[str, Any] = field(default_factory=dict[str, Any])
    """What the error's details hold, at least."""
    says: tuple[str, ...] = ()
    """What the error's message says (besides the agentool's name, which every message says)."""

    def args(self) -> tuple[str, dict[str, Any]] | None:
        """The operation and its arguments, where a JSON client could send them as a tool call."""
        if self.prompt != self.prompt.strip():
            return None  # whitespace around the object is part of the text, not of any arguments
        try:
            value = from_json(self.prompt, allow_inf_nan=False)
        except ValueError:
            return None
        if not isinstance(value, dict) or value.get('operation') not in ('add', 'div'):  # pyright: ignore[reportUnknownMemberType]
            return None
        arguments = dict(value)  # pyright: ignore[reportUnknownArgumentType]
        if any(isinstance(v, float) and not math.isfinite(v) for v in arguments.values()):
            return None  # overflowed to infinity: a JSON client would send null
        return arguments.pop('operation'), arguments


def too_large(size: int) -> dict[str, Any]:
    return {'size': size, 'limit': LIMIT}


def field_problem(name: str, kind: str) -> dict[str, Any]:
    return {'operation': 'add', 'errors': [{'loc': [name], 'type': kind}]}


CASES: dict[str, Case] = {
    # size, first and in UTF-8 bytes
    'at the limit': Case(sized(LIMIT), None),
    'at the limit, two-byte characters': Case(sized(LIMIT, 'é'), None),
    'one byte over': Case(sized(LIMIT + 1), InputTooLargeError, too_large(LIMIT + 1)),
    'over in bytes, not characters': Case(sized(LIMIT + 1, 'é'), InputTooLargeError, too_large(LIMIT + 1)),
    'over, four-byte characters': Case(sized(LIMIT + 3, '😀'), InputTooLargeError, too_large(LIMIT + 3)),
    'oversized and not JSON': Case(padded('{"operation": "add", "a": 5,, "b": "'), InputTooLargeError),
    'oversized and not an object': Case(padded('[{"b": "')[:-1] + ']', InputTooLargeError),
    'oversized with an unknown operation': Case(padded('{"operation": "nope", "b": "'), InputTooLargeError),
    'oversized and too deep': Case('{"operation": "add", "b": ' + '[' * 5000 + ']' * 5000 + '}', InputTooLargeError),
    '30 MB of nesting': Case(HUGE, InputTooLargeError, too_large(len(HUGE))),
    'over only with the whitespace after it': Case(sized(LIMIT) + ' \n', InputTooLargeError, too_large(LIMIT + 2)),
    'at the limit with the whitespace after it': Case(sized(LIMIT - 2) + ' \n', None),
    # not JSON, or not an object
    'invalid JSON': Case(
        '{"operation": "add", "a": 5', InvalidJSONError, {'position': 27, 'line': 1, 'column': 28}, ('char 27',)
    ),
    'empty': Case('', InvalidJSONError),
    'an open brace': Case('{', InvalidJSONError),
    'too deep to parse': Case(DEEP, InvalidJSONError, {'line': 1, 'column': 235}),
    'unterminated nesting': Case('[' * 1000, InvalidJSONError),
    'an array': Case('[1, 2]', NotAnObjectError, {'json_type': 'an array'}, ('got an array',)),
    'a string': Case('"add"', NotAnObjectError, {'json_type': 'a string'}, ('got a string',)),
    'a number': Case('42', NotAnObjectError, {'json_type': 'a number'}, ('got a number',)),
    'null': Case('null', NotAnObjectError, {'json_type': 'null'}, ('got null',)),
    # the operation
    'unknown operation': Case(
        '{"operation": "pow", "a": 2, "b": 3}',
        UnknownOperationError,
        {'operation': 'pow', 'known': ['add', 'div']},
        ("'pow'", "'add', 'div'"),
    ),
    'control characters in the operation': Case(
        '{"operation": "ad\\u0000d\\u001b[2J", "a": 1, "b": 2}', UnknownOperationError
    ),
    'a 3,000-character operation': Case(json.dumps({'operation': 'o' * 3000}), UnknownOperationError),
    'no operation': Case(
        '{"a": 1, "b": 2}', InputValidationError, {'errors': [{'loc': ['operation'], 'type': 'missing'}]}
    ),
    'a number for the operation': Case('{"operation": 1}', InputValidationError),
    # fields
    'missing field': Case('{"operation": "add", "a": 1}', InputValidationError, field_problem('b', 'missing')),
    'mistyped field': Case(
        '{"operation": "add", "a": "one", "b": 2}', InputValidationError, field_problem('a', 'float_parsing')
    ),
    'extra field': Case(
        '{"operation": "add", "a": 1, "b": 2, "c": 3}', InputValidationError, field_problem('c', 'extra_forbidden')
    ),
    'every field wrong': Case('{"operation": "add", "a": [], "b": {}}', InputValidationError),
    'control characters in a field': Case(
        '{"operation": "add", "a": 1, "b": 2, "x\\u0000\\u001b": 1}', InputValidationError
    ),
    **{
        number: Case(
            f'{{"operation": "add", "a": {number}, "b": 1}}', InputValidationError, field_problem('a', 'finite_number')
        )
        for number in ('NaN', 'Infinity', '-Infinity', '1e400')
    },
}


GRAPH = {'agent.run (graph)': 'sum_graph'}
"""Surfaces run on the agentool of another name: its graph run (`lean=False`)."""
TEXT_CELLS = [(surface, case) for surface in [*TEXT_SURFACES, *GRAPH] for case in CASES]
ARGS_CELLS = [(surface, case) for surface in ARGS_SURFACES for case, spec in CASES.items() if spec.args() is not None]


def _same_refusal(surface: str, got: Outcome, expected: Outcome, bound: int = MESSAGE_BOUND) -> None:
    if not isinstance(expected, Refused):
        assert not isinstance(got, Refused), got
        return
    assert isinstance(got, Refused), f'{surface} answered {got!r:.300}'
    assert len(got.text) <= bound, f'{surface}: {len(got.text)} characters'
    if surface == 'CLI call':  # prints the message alone
        assert got.message == expected.message
    elif surface == 'dispatch' and expected.kind == 'InputTooLargeError':
        # A JSON rule measures the prompt before parsing it, and says so in its own words.
        assert got.kind == expected.kind
        assert got.details == {**(expected.details or {}), 'rule': 'json:sum'}
        assert "of agentool 'sum'; refused before parsing" in got.message
    elif surface == 'dispatch':
        assert (got.kind, got.message) == (expected.kind, expected.message)
        assert got.details == {**(expected.details or {}), 'rule': 'json:sum'}
    elif surface == 'LLM toolset' and expected.kind == 'InputValidationError':
        # The model is asked again with pydantic's error list, as for any tool's arguments.
        assert got.kind == expected.kind
        assert [(e['type'], e['loc'], e['msg']) for e in got.errors or []] == [
            (e['type'], e['loc'], e['msg']) for e in expected.errors or []
        ]
    elif surface == 'MCP' and expected.kind == 'InputValidationError':
        assert got.kind == expected.kind
        assert expected.message.endswith(got.message)  # the field problems, after MCP's own prefix
    else:
        assert (got.kind, got.message) == (expected.kind, expected.message)
        if got.details is not None:
            assert got.details == expected.details


def _as_expected(case: Case, expected: Outcome) -> None:
    """The reference refuses `case` as the case says (so the matrix itself cannot drift)."""
    if case.kind is None:
        assert not isinstance(expected, Refused), expected
        return
    assert isinstance(expected, Refused), f'accepted: {expected!r:.300}'
    assert expected.kind == case.kind.__name__, expected
    details = expected.details or {}
    for key, value in case.details.items():
        if key == 'errors':
            assert [{'loc': e['loc'], 'type': e['type']} for e in details['errors']] == value
            assert all(f"field '{e['loc'][0]}'" in expected.message for e in value)
        else:
            assert details[key] == value, (key, details)
    json.dumps(details)  # structured details are plain JSON
    for said in ("'sum", *case.says):  # 'sum' or 'sum_graph'
        assert said in expected.message, (said, expected.message)


@pytest.mark.parametrize(('surface', 'case'), TEXT_CELLS, ids=[f'{s}-{c}' for s, c in TEXT_CELLS])
@pytest.mark.usefixtures('sums')
async def test_a_prompt_is_refused_alike_on_every_surface(surface: str, case: str) -> None:
    spec, name = CASES[case], GRAPH.get(surface, 'sum')
    if surface == 'dispatch' and (spec.kind in (InvalidJSONError, NotAnObjectError) or spec.prompt[:1] != '{'):
        pytest.skip('a JSON rule declines text that is no JSON object (the dispatch section below)')
    expected = await TEXT_SURFACES['injector.call'](name, spec.prompt)
    _as_expected(spec, expected)
    got = await (TEXT_SURFACES['agent.run'] if surface in GRAPH else TEXT_SURFACES[surface])(name, spec.prompt)
    _same_refusal(surface, got, expected)
    assert ran == ([] if spec.kind else ['add', 'add'])  # bad input never reaches the tool


@pytest.mark.parametrize(('surface', 'case'), ARGS_CELLS, ids=[f'{s}-{c}' for s, c in ARGS_CELLS])
@pytest.mark.usefixtures('sums')
async def test_tool_arguments_are_refused_alike_on_every_surface(surface: str, case: str) -> None:
    spec = CASES[case]
    operation, arguments = spec.args() or ('', {})
    expected = await ARGS_SURFACES['injector.run (dict)']('sum', operation, arguments)
    _as_expected(spec, expected)
    got = await ARGS_SURFACES[surface]('sum', operation, arguments)
    _same_refusal(surface, got, expected, MCP_BOUND if surface == 'MCP' else MESSAGE_BOUND)
    assert ran == ([] if spec.kind else ['add', 'add'])


@pytest.mark.parametrize('surface', TEXT_SURFACES)
@pytest.mark.usefixtures('sums')
async def test_the_default_limit_is_one_mebibyte_inclusive(surface: str) -> None:
    create_agentool('sum', SumInput, SUM_ROUTES, [add, div], replace=True)
    assert get_registry().require('sum').max_input_bytes == MB
    assert not isinstance(await TEXT_SURFACES[surface]('sum', sized(MB)), Refused)
    expected = await TEXT_SURFACES['injector.call']('sum', sized(MB + 1))
    assert isinstance(expected, Refused)
    assert expected.details == {'agentool': 'sum', 'size': MB + 1, 'limit': MB}
    assert 'max_input_bytes' in expected.message
    _same_refusal(surface, await TEXT_SURFACES[surface]('sum', sized(MB + 1)), expected)
    assert ran == ['add']  # the refused prompts never reached the tool


@pytest.mark.usefixtures('sums')
async def test_every_refusal_is_an_invalid_input_error_and_a_value_error() -> None:
    with pytest.raises(InputTooLargeError) as caught:
        await get_injector().call('sum', sized(LIMIT + 1))
    assert {InvalidInputError, AgenToolError, ValueError} <= set(type(caught.value).__mro__)


class EchoInput(BaseOperationInput):
    operation: Literal['echo']
    text: str = ''


CALLS: list[int] = []


async def echo(text: str = '') -> int:
    """The length of the text (a small output, whatever the input size)."""
    CALLS.append(len(text))
    return len(text)


def create_echo(name: str = 'echo', **kwargs: Any) -> Agent[Any, int]:
    return create_agentool(name, EchoInput, RoutingConfig(operation_map={'echo': 'echo'}), [echo], **kwargs)


ECHO_TEXT = 100 - len('{"operation": "echo", "text": ""}')
ECHO_100 = '{"operation": "echo", "text": "' + 'x' * ECHO_TEXT + '"}'
"""A valid echo prompt of 100 bytes, `ECHO_TEXT` of them its text."""


@pytest.fixture(autouse=True)
def clear_calls() -> None:
    CALLS.clear()


@pytest.mark.parametrize('surface', TEXT_SURFACES)
async def test_each_agentool_has_its_own_limit(surface: str) -> None:
    create_echo('small', max_input_bytes=50)
    create_echo('large', max_input_bytes=500)
    refused = await TEXT_SURFACES[surface]('small', ECHO_100)
    assert isinstance(refused, Refused)
    assert 'max_input_bytes' in refused.message
    assert not isinstance(await TEXT_SURFACES[surface]('large', ECHO_100), Refused)
    assert [ECHO_TEXT] == CALLS


async def test_plain_agent_follows_a_replaced_limit() -> None:
    """The plain form finds its agentool at request time, so a replacement's limit applies at once."""
    create_echo(max_input_bytes=50)
    plain = Agent('agentool:echo', output_type=int)
    with pytest.raises(InputTooLargeError):
        await plain.run(ECHO_100)
    create_echo(max_input_bytes=200, replace=True)
    assert (await plain.run(ECHO_100)).output == ECHO_TEXT


@pytest.mark.parametrize('replacement', ['value', 'function'])
async def test_an_override_keeps_the_limit(replacement: str) -> None:
    create_echo(max_input_bytes=50)
    injector = get_injector()
    stub: Any = 7 if replacement == 'value' else (lambda input: 7)
    with injector.override(echo=stub):
        assert await injector.call('echo', '{"operation": "echo"}') == 7
        for how in (injector.call, injector.run):
            with pytest.raises(InputTooLargeError):
                await how('echo', ECHO_100)


# Any code point, with multi-byte characters and lone surrogates (which no UTF-8 text can carry) made common.
characters = st.characters(exclude_categories=()) | st.sampled_from(['é', '€', '😀', '\ud800', '\udfff'])


@settings(
    max_examples=2_000 if HEAVY else 100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    text=st.text(alphabet=characters, max_size=300 if HEAVY else 80),
    limit=st.integers(min_value=1, max_value=600 if HEAVY else 160),
)
async def test_refused_exactly_when_the_utf8_size_exceeds_the_limit(text: str, limit: int) -> None:
    with use_registry():
        create_echo(max_input_bytes=limit)
        prompt = json.dumps({'operation': 'echo', 'text': text}, ensure_ascii=False)
        size = len(prompt.encode('utf-8', errors='surrogatepass'))  # a lone surrogate counts as its 3 bytes
        surrogates = any(0xD800 <= ord(c) <= 0xDFFF for c in text)  # not valid UTF-8 text: a typed refusal
        for surface in ('model string', 'injector.call'):
            answer = await TEXT_SURFACES[surface]('echo', prompt)
            if size > limit:
                assert isinstance(answer, Refused)
                assert answer.kind == 'InputTooLargeError'
            elif surrogates:
                assert isinstance(answer, Refused)
                assert answer.kind not in ('', 'InputTooLargeError')
            else:
                assert str(answer) == str(len(text))  # the model string answers text


class SizeInput(BaseOperationInput):
    operation: Literal['size']
    value: Any = None
    data: dict[str, JsonValue] | None = None
    items: list[Any] | None = None
    raw: Annotated[Any, AllowInfNan()] = None


async def size(value: Any = None, data: Any = None, items: Any = None, raw: Any = None) -> str:
    return repr((value, data, items, raw))


@pytest.fixture
def sizer(injector: AgenToolInjector) -> None:
    """The `sizer` agentool, in this test's own registry and injector (conftest's)."""
    create_agentool('sizer', SizeInput, RoutingConfig(operation_map={'size': 'size'}), [size])


HOSTILE = [
    ('{"operation": "size", "value": NaN}', ['value'], 'nan'),
    ('{"operation": "size", "value": -Infinity}', ['value'], '-inf'),
    ('{"operation": "size", "data": {"a": [1, {"b": Infinity}]}}', ['data', 'a', 1, 'b'], 'inf'),
    ('{"operation": "size", "items": [0, NaN]}', ['items', 1], 'nan'),
]


@pytest.mark.parametrize(('prompt', 'loc', 'shown'), HOSTILE)
@pytest.mark.usefixtures('sizer')
async def test_injector_call_and_agent_run_refuse_non_finite_numbers(
    injector: AgenToolInjector, prompt: str, loc: list[Any], shown: str
) -> None:
    for attempt in (lambda: injector.call('sizer', prompt), lambda: injector.get('sizer').run(prompt)):
        with pytest.raises(InputValidationError) as raised:
            await attempt()
        assert [(e['type'], e['loc'], e['input']) for e in raised.value.errors] == [('finite_number', loc, shown)]
        json.dumps(raised.value.details, allow_nan=False)  # the error itself is plain JSON


@pytest.mark.usefixtures('sizer')
async def test_a_parsed_dict_is_checked_too(injector: AgenToolInjector) -> None:
    with pytest.raises(InputValidationError, match='finite number'):
        await injector.call('sizer', {'operation': 'size', 'value': [float('nan')]})


@pytest.mark.usefixtures('sizer')
async def test_mcp_refuses_non_finite_numbers(injector: AgenToolInjector) -> None:
    # Raw JSON, as a client sends it: an MCP client library would turn NaN into null first.
    client = ('127.0.0.1', 40001)
    async with running(HttpOptions()) as app:
        session = await open_session(app, client)
        answers: dict[str, dict[str, Any]] = {}
        for value in ('NaN', 'Infinity', '1.5'):
            body = (
                '{"jsonrpc": "2.0", "id": 7, "method": "tools/call", '
                f'"params": {{"name": "sizer_size", "arguments": {{"value": [{value}]}}}}}}'
            )
            answers[value] = (await send(app, client, raw=body.encode(), session=session)).rpc()['result']
    for value in ('NaN', 'Infinity'):
        assert answers[value]['isError'] is True
        assert 'Input should be a finite number' in answers[value]['content'][0]['text']
    assert answers['1.5']['isError'] is False


@pytest.mark.usefixtures('sizer')
async def test_a_field_that_opts_in_takes_them(injector: AgenToolInjector) -> None:
    assert await injector.call('sizer', '{"operation": "size", "raw": NaN}') == '(None, None, None, nan)'
    assert SizeInput.__agentool_free_fields__ == ('value', 'data', 'items')


@pytest.mark.usefixtures('sizer')
async def test_finite_numbers_and_other_values_pass(injector: AgenToolInjector) -> None:
    prompt = '{"operation": "size", "value": {"x": [1.5, "NaN", null, true]}, "data": {"n": 1e308}}'
    assert await injector.call('sizer', prompt) == "({'x': [1.5, 'NaN', None, True]}, {'n': 1e+308}, None, None)"


def _nested(value: Any, depth: int) -> list[Any]:
    for _ in range(depth):
        value = [value]
    return value


def test_a_deeply_nested_value_is_walked_without_recursion() -> None:
    with pytest.raises(Exception, match='finite number'):
        SizeInput.model_validate({'operation': 'size', 'value': _nested(float('nan'), 5000)})


async def test_bad_input_fails_at_once_without_a_retry_loop() -> None:
    calculator = create_calculator()
    with capture_run_messages() as messages, pytest.raises(InputValidationError):
        await calculator.run('{"operation": "add"}')
    assert [type(m).__name__ for m in messages] == ['ModelRequest']


async def test_error_is_raised_before_any_tool_call() -> None:
    calculator = create_calculator()
    seen: list[Any] = []

    async def walk() -> None:
        async with calculator.iter('{"operation": "add", "a": 1}') as run:
            async for node in run:
                seen.append(node)

    with pytest.raises(InvalidInputError):
        await walk()
    assert all('CallToolsNode' not in type(node).__name__ for node in seen)


@pytest.mark.parametrize(
    ('prompt', 'where'),
    [
        ('[' * 100_000 + ']' * 100_000, (1, 202)),  # deeper than the standard library parses
        ('{"operation": "add",\n "b": ' + '[' * 300 + ']' * 300 + '}', (2, 207)),  # deeper than pydantic's limit
        ('{"operation": "add", "a": ' + '9' * 5000 + ', "b": 1}', (1, 4328)),  # too long an integer
        ('{"operation": "é", "b": ' + '[' * 300 + ']' * 300 + '}', (1, 225)),  # columns in characters, not bytes
    ],
)
async def test_json_that_cannot_be_read_reports_its_position_too(prompt: str, where: tuple[int, int]) -> None:
    calculator = create_calculator()
    with pytest.raises(InvalidJSONError) as caught:
        await calculator.run(prompt)
    details = caught.value.details
    assert (details['line'], details['column']) == where
    line_start = 0 if where[0] == 1 else prompt.index('\n') + 1
    assert details['position'] == line_start + where[1] - 1
    assert f'char {details["position"]}' in str(caught.value)


async def test_bytes_that_are_not_utf8_report_line_and_column() -> None:
    create_calculator()
    with pytest.raises(InvalidJSONError) as caught:
        await get_injector().call('calculator', b'{"operation":\n "\xff"}')
    details = caught.value.details
    assert (details['position'], details['line'], details['column']) == (16, 2, 3)


# --- dispatch --------------------------------------------------------------------------------------


HUGE_SIZE = 30 * MB
"""Tens of megabytes: parsing this much costs seconds and hundreds of MB; refusing it must not."""
LONG = 2 * MB
"""Over every limit here, for dispatch_prompts that reach the model (whose own handling costs their size)."""


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


class Model:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.calls += 1
        return ModelResponse(parts=[TextPart('model')])


def make(*rules: DispatchRule, output_type: Any = str) -> tuple[Agent[None, Any], Model, DispatchCapability]:
    """An agent with `rules`, reaching `notes` (limited to 1,000 bytes), `big` (a megabyte) and `answers`."""
    agentool('notes', NotesInput, {'say': say, 'ping': ping}, max_input_bytes=1000, replace=True)
    agentool('big', BigInput, {'shout': shout}, max_input_bytes=MB, replace=True)
    agentool('answers', AnswerInput, {'ticket': ticket, 'odd': odd, 'tickets': tickets}, replace=True)
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
        await agent.run(not_json(HUGE_SIZE))
    assert caught.value.details == {
        **({'agentool': 'notes'} if rule.agentool else {}),
        'rule': rule.label,
        'size': HUGE_SIZE + 2,
        'limit': limit,
    }
    assert len(caught.value.message) < 300
    assert (model.calls, capability.counts.errors) == (0, 1)


async def test_refusing_tens_of_megabytes_of_json_costs_no_more_than_its_size() -> None:
    # A valid object this size took seconds and ~20x its size in memory to parse before the check.
    agent, model, _ = make(JsonRule())
    prompt = '{"operation": "shout", "text": "' + 'y' * HUGE_SIZE + '"}'
    tracemalloc.start()
    try:
        with pytest.raises(InputTooLargeError):
            await agent.run(prompt)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < HUGE_SIZE // 4
    assert model.calls == 0


async def test_json_rule_without_a_target_measures_against_the_largest_candidate_limit() -> None:
    # Over `notes`' limit but within `big`'s: parsed, routed, and refused by the agentool it names.
    agent, _, _ = make(JsonRule())
    assert (await agent.run('{"operation": "shout", "text": "' + 'a' * 5000 + '"}')).output == 'A' * 5000
    with pytest.raises(InputTooLargeError) as caught:
        await agent.run('{"operation": "say", "text": "' + 'a' * 5000 + '"}')
    assert caught.value.details['agentool'] == 'notes'


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
        await agent.run('/say ' + 'z' * HUGE_SIZE)
    assert caught.value.details == {'agentool': 'notes', 'rule': 'command:/say', 'size': HUGE_SIZE + 5, 'limit': 1000}
    assert (await agent.run('/sayz' + 'z' * LONG)).output == 'model'  # not the prefix: declined
    assert model.calls == 1


# --- bounded errors ------------------------------------------------------------------------------


class Named(DispatchRule):
    def match(self, request: Any, operations: Any) -> Dispatch | None:
        return Dispatch(agentool='n' * 1_000_000, input={'operation': 'ping'})


@pytest.mark.parametrize(
    ('rule', 'prompt'),
    [(JsonRule(), '{"agentool": "' + 'n' * 1_000_000 + '", "operation": "ping"}'), (Named(), 'anything')],
    ids=['unknown in the prompt', 'named by a rule'],
)
async def test_a_megabyte_agentool_name_is_not_repeated_in_full(rule: DispatchRule, prompt: str) -> None:
    agent, _, _ = make(rule)
    with pytest.raises(DispatchTargetError) as caught:
        await agent.run(prompt)
    error = caught.value
    assert len(error.message) < 2000
    assert error.details['target'] == clip('n' * 1_000_000)
    assert error.details['target_length'] == 1_000_000
    assert len(repr(error.details)) < 2000


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


# --- answers as on every surface -----------------------------------------------------------------


ODD = CommandRule(prefix='/odd', agentool='answers', operation='odd')
TICKET = CommandRule(prefix='/ticket', agentool='answers', operation='ticket')
TICKETS = CommandRule(prefix='/tickets', agentool='answers', operation='tickets')


async def test_a_non_finite_answer_for_a_text_agent_is_an_output_error() -> None:
    agent, _, _ = make(ODD)
    with pytest.raises(OutputError) as caught:
        await agent.run('/odd')
    expected = {'reason': 'non_finite_number', 'rule': 'command:/odd', 'operation': 'odd'}
    assert caught.value.details.items() >= expected.items()


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
BUILT = NotesInput(operation='say')
"""A model instance a rule may build: `say` without the `text` it needs."""


async def refused_as_the_agentool_refuses(
    agent: Agent[None, Any], prompt: str, input: Any, rule: str, kind: type[InvalidInputError] = InvalidInputError
) -> None:
    """`agent.run(prompt)` ends with the typed error (a `kind`) the agentool gives for `input`, naming `rule`."""
    with pytest.raises(InvalidInputError) as expected:
        await get_injector().call('notes', input)
    with pytest.raises(kind) as caught:
        await agent.run(prompt)
    assert type(caught.value) is type(expected.value)
    assert caught.value.message == expected.value.message
    assert caught.value.details == {**expected.value.details, 'rule': rule}


@pytest.mark.parametrize('rule', [JsonRule(agentool='notes'), JsonRule()], ids=['named', 'by-operation'])
async def test_a_json_rule_declines_a_prompt_with_a_lone_surrogate(rule: JsonRule) -> None:
    # No JSON text holds a lone surrogate: like any other text that is not JSON, the model gets it.
    agent, model, capability = make(rule)
    assert (await agent.run(f'{{"operation": "say", "text": "{LONE}"}}')).output == 'model'
    assert model.calls == 1
    assert (capability.counts.dispatched, capability.counts.sent_to_model, capability.counts.errors) == (0, 1, 0)


@pytest.mark.parametrize(
    ('build', 'prompt', 'input'),
    [
        (None, f'{{"operation": "say", "text": "{LONE}"}}', None),  # the prompt, passed on
        (lambda r: BUILT, 'anything', BUILT),  # checked like any other input
    ],
    ids=['prompt with a lone surrogate', 'built model'],
)
async def test_what_a_predicate_rule_passes_on_gets_the_agentools_error(build: Any, prompt: str, input: Any) -> None:
    agent, model, _ = make(PredicateRule(name='all', agentool='notes', when=lambda r: True, build=build))
    await refused_as_the_agentool_refuses(agent, prompt, input or prompt, 'all', InputValidationError)
    assert model.calls == 0


SAY = r'/say (?P<text>.*)'


async def test_a_command_capturing_a_lone_surrogate_gets_the_agentools_error_naming_the_rule() -> None:
    agent, model, capability = make(CommandRule(name='say', pattern=SAY, agentool='notes', operation='say'))
    await refused_as_the_agentool_refuses(agent, f'/say {LONE}', {'text': LONE, 'operation': 'say'}, 'say')
    assert (model.calls, capability.counts.errors) == (0, 1)


@pytest.mark.parametrize(
    ('rule', 'prompt'),
    [
        (JsonRule(agentool='notes', on_invalid='fall_through'), not_json(LONG)),  # unparsed
        (
            CommandRule(prefix='/ping', agentool='notes', operation='ping', on_invalid='fall_through'),
            '/ping now please',
        ),
        (CommandRule(pattern=SAY, agentool='notes', operation='say', on_invalid='fall_through'), f'/say {LONE}'),
    ],
    ids=['oversized json', 'prefix command with arguments', 'command capturing a lone surrogate'],
)
async def test_a_prompt_a_rule_refuses_falls_through_when_the_rule_says_so(rule: DispatchRule, prompt: str) -> None:
    agent, model, capability = make(rule)
    assert (await agent.run(prompt)).output == 'model'
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
        await refused_as_the_agentool_refuses(
            agent, f'/say {long}', {'text': long, 'operation': 'say'}, 'say', InputTooLargeError
        )
    else:
        assert (await agent.run(f'/say {long}')).output == 'model'
        assert capability.counts.fell_through == 1
    assert model.calls == (on_invalid == 'fall_through')
    assert (await agent.run('/say short')).output == 'short'


DISPATCH_EXAMPLES = 1_000 if HEAVY else 50
DISPATCH_BIG = 24 * 1024 * 1024 if HEAVY else 4 * LIMIT
"""An oversized payload (every agentool here takes `LIMIT`); a turn no rule claims hands it to the model."""
DETAILS_BOUND = 4_000


class AnswersInput(BaseOperationInput):
    operation: Literal['inf', 'nan', 'huge', 'deep', 'name']


ANSWERS: dict[str, Any] = {
    'inf': [math.inf, -math.inf],
    'nan': {'x': math.nan},
    'huge': 10**5000,
    'deep': _nested([], 1_000),
    'name': 'n' * 1024 * 1024,
}


async def answer(operation: str) -> Any:
    return ANSWERS[operation]


@pytest.fixture
def agents() -> Iterator[list[Agent[None, Any]]]:
    """A text agent and a typed one, with the same rules; built once for all examples (stateless).

    In a registry of their own: `notes` and `answers` here differ from the other tests' (a common limit).
    """
    with use_registry():
        agentool('notes', NotesInput, {'say': say, 'ping': ping}, max_input_bytes=LIMIT)
        agentool('answers', AnswersInput, dict.fromkeys(ANSWERS, answer), max_input_bytes=LIMIT)
        rules = [
            JsonRule(),
            CommandRule(pattern=r'/say (?P<text>.+)', agentool='notes', operation='say'),
            CommandRule(prefix='/ping', agentool='notes', operation='ping'),
            CommandRule(pattern=r'/answer (?P<operation>inf|nan|huge|deep|name)', agentool='answers'),
        ]
        output_types: list[Any] = [str, list[Any] | dict[str, Any] | int | str]
        yield [
            Agent(
                FunctionModel(Model()),
                deps_type=type(None),
                output_type=output_type,
                capabilities=[DispatchCapability(rules)],
            )
            for output_type in output_types
        ]


controls = st.text(alphabet=st.characters(categories=['Cc', 'Cs', 'Zl', 'Zp']), min_size=1, max_size=12)
sizes = st.sampled_from([LIMIT + 1, DISPATCH_BIG])
depths = st.sampled_from([100, 1_000, 100_000 if HEAVY else 10_000])
non_finite = st.sampled_from(['NaN', 'Infinity', '-Infinity', '1e400', '-1e400'])
huge_ints = st.integers(min_value=400, max_value=LIMIT - 100).map(lambda n: '9' * n)


def _object(**fields: str) -> str:
    """A JSON object from fields given as JSON text (so non-JSON numbers can be written)."""
    return '{' + ', '.join(f'{json.dumps(k)}: {v}' for k, v in fields.items()) + '}'


dispatch_prompts = st.one_of(
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


@settings(max_examples=DISPATCH_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(prompt=dispatch_prompts)
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


# --- fuzzing every surface ------------------------------------------------------------------------


FUZZ_EXAMPLES = 60 if HEAVY else 3
"""Examples per family and surface."""
FUZZ_LIMIT = 2 * MB
"""The hostile agentools' `max_input_bytes`: a megabyte operation name is parsed, a bigger payload refused."""

# --- the agentools under attack ----------------------------------------------------------------------


class HostileInput(BaseOperationInput):
    operation: Literal['echo', 'count']
    text: str = ''
    n: int = 0
    x: float = 0.0
    data: JsonValue = None


def echo_sizes(text: str = '', n: int = 0, x: float = 0.0) -> str:
    """Answer with the sizes of what it got (never the values, which may be huge)."""
    return f'{len(text)} {n.bit_length()} {x!r}'


def count_kind(data: JsonValue = None) -> str:
    """Answer with the kind of value it got (a deep value is never walked)."""
    return type(data).__name__


NAMES = ('hostile', 'hostile_graph')


@pytest.fixture
def hostile_agentools() -> None:
    routes = RoutingConfig(operation_map={'echo': 'echo_sizes', 'count': 'count_kind'})
    for name, lean in zip(NAMES, (True, False), strict=True):
        tools = [echo_sizes, count_kind]
        create_agentool(name, HostileInput, routes, tools, output_type=str, max_input_bytes=FUZZ_LIMIT, lean=lean)


# --- the cases ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FuzzCase:
    """One hostile input: the agentool name a surface is given, the operation, and the fields as JSON text."""

    family: str
    name: str = 'hostile'
    operation: str = 'echo'
    body: str = ''
    """The fields (without the operation) as the inside of a JSON object: `"x": NaN`."""

    @property
    def prompt(self) -> str:
        operation = json.dumps(self.operation, ensure_ascii=False)
        return '{"operation": ' + operation + (', ' + self.body if self.body else '') + '}'

    @property
    def args_text(self) -> str:
        return '{' + self.body + '}'

    @property
    def args(self) -> dict[str, Any] | None:
        """The fields as a dict, for surfaces whose clients send JSON (`None`: no JSON client could send them)."""
        try:
            value = from_json(self.args_text)
        except ValueError:
            return None
        if not isinstance(value, dict) or _non_finite(value):  # a JSON client writes NaN as null
            return None
        return value  # pyright: ignore[reportUnknownVariableType]

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:  # hypothesis's report of a failing case
        printer.text(repr(self))

    def __repr__(self) -> str:  # a megabyte case stays readable in a failure report
        def cut(text: str) -> str:
            return repr(text) if len(text) <= 60 else f'{text[:40]!r}...({len(text)} chars)'

        return f'FuzzCase({self.family}, name={cut(self.name)}, operation={cut(self.operation)}, body={cut(self.body)})'


def _non_finite(value: Any) -> bool:
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, float) and (item != item or item in (float('inf'), float('-inf'))):
            return True
        if isinstance(item, dict):
            pending.extend(item.values())  # pyright: ignore[reportUnknownArgumentType,reportUnknownMemberType]
        elif isinstance(item, list):
            pending.extend(item)  # pyright: ignore[reportUnknownArgumentType]
    return False


SIZES = [1_000, 100_000, MB, *([8 * MB] if HEAVY else [])]
CONTROL = st.characters(categories=['Cc', 'Cf', 'Zl', 'Zp']) | st.sampled_from(['\x00', '\r\n', '\n', '\t', '\x1b'])
WORDS = st.text(alphabet=st.characters(codec='utf-8', categories=['L', 'N']), min_size=1, max_size=6)


def _megabyte_names() -> st.SearchStrategy[FuzzCase]:
    sizes, chars = st.sampled_from(SIZES), st.sampled_from(['n', 'é', '😀', '\x00'])
    big = st.builds(lambda size, char: char * (size // len(char.encode())), sizes, chars)
    return st.one_of(
        big.map(lambda name: FuzzCase('megabyte name', name=name)),
        big.map(lambda name: FuzzCase('megabyte operation', operation=name)),
        big.map(lambda name: FuzzCase('megabyte field name', body=json.dumps(name, ensure_ascii=False) + ': 1')),
    )


def _control_characters() -> st.SearchStrategy[FuzzCase]:
    hostile = st.builds(lambda a, c, b: a + c + b, WORDS, CONTROL, WORDS)
    return st.one_of(
        hostile.map(lambda name: FuzzCase('control name', name=name)),
        hostile.map(lambda name: FuzzCase('control operation', operation=name)),
        hostile.map(lambda text: FuzzCase('control text', body='"text": ' + json.dumps(text))),
        hostile.map(lambda key: FuzzCase('control field name', body=json.dumps(key) + ': 1')),
        st.sampled_from(['ho\x00stile', 'hostile\n', 'hostile\r\nx', '\u202ehostile', 'hostile\x1b[2J']).map(
            lambda name: FuzzCase('control name', name=name)
        ),
    )


NUMBERS = ['NaN', 'Infinity', '-Infinity', '1e400', '-1e400', '1E999']


def _non_finite_numbers() -> st.SearchStrategy[FuzzCase]:
    fields = st.sampled_from(['x', 'n', 'text', 'data'])
    shapes = st.sampled_from(['{}', '[{}]', '{{"a": {}}}', '[1, [{}]]'])
    body = st.builds(
        lambda key, shape, number: f'"{key}": ' + shape.format(number), fields, shapes, st.sampled_from(NUMBERS)
    )
    return st.builds(FuzzCase, st.just('non-finite number'), body=body, operation=st.sampled_from(['echo', 'count']))


def _huge_integers() -> st.SearchStrategy[FuzzCase]:
    digits = st.sampled_from([19, 20, 400, 4_300, 4_301, 100_000, *([5_000_000] if HEAVY else [])])
    fields = st.sampled_from(['n', 'x', 'text', 'data'])
    body = st.builds(lambda key, k, sign: f'"{key}": {sign}1' + '0' * k, fields, digits, st.sampled_from(['', '-']))
    return st.builds(FuzzCase, st.just('huge integer'), body=body, operation=st.sampled_from(['echo', 'count']))


def _deep_nesting() -> st.SearchStrategy[FuzzCase]:
    depths = st.sampled_from([64, 1_000, 10_000, *([200_000] if HEAVY else [])])
    openers = st.sampled_from(['[', '{"a": '])
    fields = st.sampled_from(['data', 'text', 'n'])

    def nest(key: str, depth: int, opener: str) -> str:
        closer = ']' if opener == '[' else '}'
        return f'"{key}": ' + opener * depth + '1' + closer * depth

    body = st.builds(nest, fields, depths, openers)
    return st.builds(FuzzCase, st.just('deep nesting'), body=body, operation=st.sampled_from(['echo', 'count']))


def _oversized_payloads() -> st.SearchStrategy[FuzzCase]:
    sizes = st.sampled_from([FUZZ_LIMIT - 100, FUZZ_LIMIT + 1, *([2 * FUZZ_LIMIT, 40 * MB] if HEAVY else [])])
    body = st.builds(
        lambda size, char: '"text": "' + char * (size // len(char.encode())) + '"', sizes, st.sampled_from('yé')
    )
    return st.builds(FuzzCase, st.just('oversized payload'), body=body)


FAMILIES: dict[str, st.SearchStrategy[FuzzCase]] = {
    'megabyte names': _megabyte_names(),
    'control characters': _control_characters(),
    'non-finite numbers': _non_finite_numbers(),
    'huge integers': _huge_integers(),
    'deep nesting': _deep_nesting(),
    'oversized payloads': _oversized_payloads(),
}
"""Each surface is fuzzed per family, so every family reaches every surface."""


# --- what every answer must be, and what was seen ----------------------------------------------------


@dataclass
class Seen:
    cases: int = 0
    refusals: int = 0
    longest: int = 0
    longest_case: str = ''
    slowest: float = 0.0
    slowest_case: str = ''
    families: dict[str, int] = field(default_factory=dict[str, int])


SEEN: dict[str, Seen] = {}


@pytest.fixture(scope='module', autouse=True)
def report() -> Iterator[None]:
    yield
    for surface, seen in SEEN.items():
        print(  # the fuzz counts, shown with `-s`
            f'\n{surface}: {seen.cases} cases ({seen.refusals} refused), longest error {seen.longest} chars '
            f'({seen.longest_case}), slowest refusal {seen.slowest:.3f} s ({seen.slowest_case}); '
            f'families {dict(sorted(seen.families.items()))}'
        )


def seen(surface: str, case: FuzzCase, *, text: str | None = None, started: float | None = None) -> None:
    """Count one answer: a refusal when `text` (the error as the caller gets it) is given."""
    record = SEEN.setdefault(surface, Seen())
    record.cases += 1
    record.families[case.family] = record.families.get(case.family, 0) + 1
    if text is None:
        return
    record.refusals += 1
    if len(text) > record.longest:
        record.longest, record.longest_case = len(text), repr(case)
    if started is not None and (elapsed := time.perf_counter() - started) > record.slowest:
        record.slowest, record.slowest_case = elapsed, repr(case)


FUZZ = settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    database=None,
    derandomize=not HEAVY,  # the short run is the same every time; `make fuzz` explores
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)

# --- the surfaces (tests/surface_callers.py), each given a case ---------------------------------------------


def _known_tool(case: FuzzCase) -> str:
    """The tool an LLM calls: one the toolset lists (pydantic-ai answers an unknown name itself)."""
    return f'hostile_{case.operation}' if case.operation in ('echo', 'count') else 'hostile_echo'


async def _mcp(case: FuzzCase, data: st.DataObject) -> Outcome:
    if (arguments := case.args) is None:  # no JSON client could send it (NaN, too deep for the client, ...)
        return None
    name = case.name if case.name != 'hostile' else data.draw(st.sampled_from(NAMES))
    return await ARGS_SURFACES['MCP'](name, case.operation, arguments)


async def _test_double(case: FuzzCase, data: st.DataObject) -> Outcome:
    if (arguments := case.args) is None:
        return None
    agent = Agent('test', output_type=str, toolsets=[AgenToolToolset(include=['hostile'])])
    double = AgentDouble(Script(Call(_known_tool(case), arguments), Output('done')))
    try:
        with agent.override(model=double):
            return (await agent.run('go')).output
    except AgenToolError as error:
        return Refused(type(error).__name__, error.message, str(error))


SURFACES: dict[str, Callable[[FuzzCase, st.DataObject], Awaitable[Outcome]]] = {
    'agent.run (lean)': lambda case, data: TEXT_SURFACES['agent.run']('hostile', case.prompt),
    'agent.run (graph)': lambda case, data: TEXT_SURFACES['agent.run']('hostile_graph', case.prompt),
    'Agent("agentool:NAME")': lambda case, data: TEXT_SURFACES['model string'](case.name, case.prompt),
    'injector.call': lambda case, data: TEXT_SURFACES['injector.call'](case.name, case.prompt),
    'CLI call': lambda case, data: TEXT_SURFACES['CLI call'](case.name, case.prompt),
    'MCP': _mcp,
    'LLM toolset': lambda case, data: llm_tool_call(_known_tool(case), case.args_text),
    'test double': _test_double,
}
"""Each surface given a case; `None` when the case cannot be put to it (MCP and the double send JSON)."""
BOUNDS = {'MCP': MCP_BOUND}


@pytest.mark.parametrize('surface', list(SURFACES))
@pytest.mark.parametrize('family', list(FAMILIES))
@FUZZ
@given(data=st.data())
@pytest.mark.usefixtures('hostile_agentools')
async def test_every_answer_is_a_result_or_a_bounded_typed_refusal(
    surface: str, family: str, data: st.DataObject
) -> None:
    case = data.draw(FAMILIES[family])
    started = time.perf_counter()
    got = await SURFACES[surface](case, data)  # anything but an agentool error fails the test
    if not isinstance(got, Refused):
        seen(surface, case)
        return
    seen(surface, case, text=got.text, started=started)
    if got.errors is not None:  # a toolset refusal goes back to the model as a list of errors, each bounded
        for error in got.errors:
            assert len(str(error.get('msg', ''))) <= MESSAGE_BOUND, f'{surface}: retry {error!r:.300} for {case!r}'
    else:
        bound = BOUNDS.get(surface, MESSAGE_BOUND)
        assert len(got.text) <= bound, f'{surface}: {got.kind} of {len(got.text)} chars for {case!r}'


BIG_TEXT = (50 if HEAVY else 10) * 1024 * 1024
DEPTH = 100_000 if HEAVY else 10_000


class Flat(BaseOperationInput):
    operation: Literal['echo', 'count']
    text: str = ''
    n: int = 0


class Address(BaseModel):
    street: str
    zip: str = Field(pattern=r'^\d{5}$')


class Nested(BaseOperationInput):
    operation: Literal['echo']
    address: Address
    tags: list[str] = Field(default_factory=list[str])
    when: date | None = None


class Color(StrEnum):
    RED = 'red'
    BLUE = 'blue'


class UnionInput(BaseOperationInput):
    operation: Literal['echo', 'count']
    value: int | str | list[int] | dict[str, float] = 0
    color: Color = Color.RED


class FreeOp(BaseModel):
    operation: str
    payload: Any = None


async def echo_fields(**kwargs: Any) -> str:
    return json.dumps(kwargs, default=str)


async def count_fields(**kwargs: Any) -> int:
    return len(kwargs)


ECHO: dict[str, Any] = {'echo': ('echo_fields', BaseModel.model_dump)}
BOTH: dict[str, Any] = {**ECHO, 'count': ('count_fields', BaseModel.model_dump)}
SHAPES: dict[str, tuple[type[BaseModel], dict[str, Any]]] = {
    'flat': (Flat, BOTH),
    'nested': (Nested, ECHO),
    'union': (UnionInput, BOTH),
    'free': (FreeOp, ECHO),
}


def _agents() -> dict[str, Agent[Any, Any]]:
    return {
        name: create_agentool(
            name, schema, RoutingConfig(operation_map=routes), [echo_fields, count_fields], output_type=str
        )
        for name, (schema, routes) in SHAPES.items()
    }


# Any code point, lone surrogates (which no UTF-8 text can carry) made common.
any_characters = st.characters(exclude_categories=()) | st.sampled_from(['\ud800', '\udfff', 'é', '😀', '\x00'])
texts = st.text(alphabet=any_characters, max_size=20)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | texts,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)
field_names = st.sampled_from(['operation', 'text', 'n', 'address', 'tags', 'when', 'value', 'color', 'payload', 'x'])
operations = st.sampled_from(['echo', 'count', 'nope', '', 'ECHO']) | st.text(max_size=5)
objects = st.dictionaries(field_names, json_values, max_size=6).flatmap(
    lambda d: st.just(d) | operations.map(lambda op: {**d, 'operation': op})
)
any_prompts = (
    st.text(alphabet=any_characters, max_size=60)
    | json_values.map(json.dumps)
    | objects.map(json.dumps)
    | objects.map(lambda d: json.dumps(d, ensure_ascii=False))
    | objects.map(lambda d: json.dumps(d)[:-1])  # truncated JSON
)


async def _run(agent: Agent[Any, Any], prompt: str) -> None:
    try:
        result = await agent.run(prompt)
    except AgenToolError:
        return
    assert isinstance(result.output, str)


async def _call(name: str, prompt: str) -> None:
    """The direct path (no agent graph) must hold the same line."""
    try:
        output = await get_injector().call(name, prompt)
    except AgenToolError:
        return
    assert isinstance(output, str)


@settings(
    max_examples=3_000 if HEAVY else 150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(prompt=any_prompts, shape=st.sampled_from(sorted(SHAPES)))
async def test_any_prompt_is_an_output_or_a_typed_error(prompt: str, shape: str) -> None:
    with use_registry():
        agents = _agents()
        await _run(agents[shape], prompt)
        await _call(shape, prompt)


@pytest.mark.parametrize('text', ['x', 'é'])
async def test_refusing_a_huge_prompt_holds_at_most_one_copy_of_it(text: str) -> None:
    """Memory stays bounded by the input: an ASCII prompt is measured in place, other text encoded once."""
    agent = _agents()['flat']
    prompt = json.dumps({'operation': 'echo', 'text': text * BIG_TEXT}, ensure_ascii=False)
    await _run(agent, '{}')  # first-run allocations (lazy imports, caches) are not the prompt's
    tracemalloc.start()
    try:
        with pytest.raises(InputTooLargeError):
            await agent.run(prompt)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    copy = 0 if prompt.isascii() else len(prompt.encode())
    assert peak < copy + 1024 * 1024


async def test_ten_megabyte_string_within_a_raised_limit_is_handled() -> None:
    routes = RoutingConfig(operation_map=dict.fromkeys(['echo', 'count'], 'count_fields'))
    agent = create_agentool('big', Flat, routes, [count_fields], max_input_bytes=2 * BIG_TEXT)
    prompt = json.dumps({'operation': 'echo', 'text': 'x' * BIG_TEXT})
    assert (await agent.run(prompt)).output == 0


@pytest.mark.parametrize('shape', sorted(SHAPES))
@pytest.mark.parametrize('opener', ['[', '{"a":'])
async def test_ten_thousand_deep_nesting_fails_cleanly(shape: str, opener: str) -> None:
    agent = _agents()[shape]
    closer = ']' if opener == '[' else '}'
    field = 'payload' if shape == 'free' else 'text'
    prompt = '{"operation": "echo", "' + field + '": ' + opener * DEPTH + '1' + closer * DEPTH + '}'
    with pytest.raises(InvalidInputError):
        await agent.run(prompt)


# Sized for `make test`; `make fuzz` (AGENTOOL_FUZZ=1) runs ten times as many.
PAYLOADS = settings(
    max_examples=500 if HEAVY else 50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
CREATE: dict[str, Callable[[], Any]] = {
    'calculator': lambda: create_calculator(replace=True),
    'storage': lambda: create_storage(replace=True),
    'sessions': lambda: (create_storage(replace=True), create_sessions(replace=True)),
    'todo': lambda: create_todo(),
}
_INPUT_ERRORS = ('invalid input for agentool', 'input to agentool', 'has no operation')
_NOISE: tuple[Any, ...] = (None, 'x', 0, 1.5, True, [], {'k': 1})


@pytest.fixture
async def fresh_store() -> AsyncIterator[None]:
    store = SQLiteStore(MEMORY)
    get_injector().provide(SQLiteStore, instance=store, replace=True)
    yield
    await store.aclose()


def payloads(name: str) -> st.SearchStrategy[dict[str, Any]]:
    """Valid inputs, invalid ones, and near misses of valid ones, all JSON objects."""
    valid = valid_inputs(name)
    kinds = ('unknown_operation', 'missing_field', 'wrong_type', 'unknown_field')
    invalid = invalid_inputs(name, kinds=kinds).map(json.loads)
    keys = st.deferred(lambda: st.sampled_from(sorted(get_registry().get_manager(name).input_schema.model_fields)))
    dropped = st.tuples(valid, keys).map(lambda pair: {k: v for k, v in pair[0].items() if k != pair[1]})
    changed = st.tuples(valid, keys, st.sampled_from(_NOISE)).map(lambda t: {**t[0], t[1]: t[2]})
    return st.one_of(valid, invalid, dropped, changed)


@dataclass(frozen=True)
class Surfaces:
    """What the surfaces of one agentool need, built once per test."""

    name: str
    plain: Agent[Any, Any]
    server: Any
    tools: dict[str, ToolsetTool[Any]]

    @classmethod
    async def build(cls, name: str) -> Surfaces:
        output_type = get_registry().require(name).output_type
        plain = Agent(f'agentool:{name}', output_type=str if output_type is None else output_type)
        toolset: AgenToolToolset[Any] = AgenToolToolset()
        tools = await toolset.get_tools(RunContext[Any](deps=None, model=TestModel(), usage=RunUsage()))
        return cls(name=name, plain=plain, server=create_mcp_server(), tools=tools)


async def verdicts(surfaces: Surfaces, payload: dict[str, Any]) -> dict[str, bool]:
    """Whether each surface accepted `payload` for the agentool."""
    name = surfaces.name
    text = json.dumps(payload)
    operation = payload.get(get_registry().get_manager(name).operation_field)
    tool = f'{name}_{operation}' if isinstance(operation, str) else None
    agent = get_injector().get(name)
    arguments = {k: v for k, v in payload.items() if k != 'operation'}
    return {
        'agent.run': await _through(agent.run(text)),
        'model string': await _through(surfaces.plain.run(text)),
        'injector.call': await _through(get_injector().call(name, payload)),
        'cli': await anyio.to_thread.run_sync(_cli, name, text),
        'mcp': await _mcp_accepts(surfaces.server, tool, arguments),
        'toolset': _toolset(surfaces.tools, tool, arguments),
        'double': await _double(agent, payload),
    }


async def _through(call: Any) -> bool:
    try:
        await call
    except InvalidInputError:
        return False
    except Exception:  # the tool's own failure: the input got through
        return True
    return True


def _cli(name: str, text: str) -> bool:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        status = main(['call', name, text])
    return status == 0 or not any(marker in err.getvalue() for marker in _INPUT_ERRORS)


async def _mcp_accepts(server: Any, tool: str | None, arguments: dict[str, Any]) -> bool:
    async with Client(server) as client:
        try:
            result = await client.call_tool(tool or 'none', arguments)
        except MCPError:  # no such tool: the operation is unknown
            return False
        except RuntimeError as error:  # the client refused the tool's *output* (say infinity): the input got through
            if 'structured content' not in str(error):
                raise
            return True
    text = result.content[0].model_dump().get('text', '') if result.content else ''
    return not (result.is_error and str(text).startswith('invalid arguments'))


def _toolset(tools: dict[str, ToolsetTool[Any]], tool: str | None, arguments: dict[str, Any]) -> bool:
    if tool not in tools:
        return False
    try:
        tools[tool].args_validator.validate_python(arguments)
    except ValidationError:
        return False
    return True


async def _double(agent: Any, payload: dict[str, Any]) -> bool:
    double = AgentDouble(
        Script(Call(MANAGER_TOOL_NAME, payload), OutputFrom(lambda run: run.result(MANAGER_TOOL_NAME)))
    )
    with agent.override(model=double):
        try:
            await agent.run('go')
        except InvalidInputError:
            return False
        except DriftError as error:  # the agent's own validation refused the call (or, later, the output)
            return error.details.get('tool') != MANAGER_TOOL_NAME
        except Exception:
            return True
    return True


@pytest.mark.usefixtures('fresh_store')
@pytest.mark.parametrize('name', sorted(CREATE))
def test_a_payload_is_accepted_by_one_surface_iff_by_all(name: str) -> None:
    CREATE[name]()
    surfaces = anyio.run(Surfaces.build, name)
    seen = {'accepted': 0, 'refused': 0}

    @PAYLOADS
    @given(payloads(name))
    def check(payload: dict[str, Any]) -> None:
        found = anyio.run(verdicts, surfaces, payload)
        assert len(set(found.values())) == 1, (payload, found)
        seen['accepted' if found['agent.run'] else 'refused'] += 1

    check()
    # Both sides of the property were exercised.
    assert seen['accepted'] > 0, seen
    assert seen['refused'] > 0, seen
