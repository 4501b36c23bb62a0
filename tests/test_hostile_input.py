"""Hostile and oversized input on every surface: the same typed error, with bounded text, and no tool call.

One matrix: each input in `CASES` (too large, too deep, not JSON, not an object, an unknown operation,
a missing, extra or mistyped field, control characters, non-finite numbers, a megabyte name) through
each surface of tests/surface_callers.py. The reference is `injector.call` on the same input (JSON text
for the prompt surfaces, the dict for the argument surfaces); every surface must refuse exactly when it
refuses, with the same error class and message (the CLI prints the message, MCP and the toolset carry
it in their own envelopes), the same structured details where the surface hands over the error, text
within a fixed bound, and the tool never reached. Size is checked first: an input over
`max_input_bytes` is refused as too large whatever else is wrong with it, before anything parses it
(30 MB of nesting would take seconds and gigabytes to parse).

After the matrix, what it cannot hold: each agentool has its own limit (also after a replacement
and under an override), fuzzed to be refused exactly when the UTF-8 size exceeds it; infinite and
NaN numbers never reach a tool through a free-form field unless the field opts in (raw JSON over
HTTP too); and bad input ends `agent.run` at once, before any tool call, with the position of JSON
that cannot be read.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import JsonValue
from pydantic_ai import Agent, capture_run_messages
from pydantic_core import from_json, to_json

from agentool import (
    AgenToolError,
    AllowInfNan,
    BaseOperationInput,
    InputTooLargeError,
    InputValidationError,
    InvalidInputError,
    InvalidJSONError,
    NotAnObjectError,
    RoutingConfig,
    UnknownOperationError,
    create_agentool,
    get_injector,
    get_registry,
    use_registry,
)
from agentool.core.injector import AgenToolInjector
from agentool.mcp_http import HttpOptions
from examples.calculator import create_calculator
from tests.mcp_asgi import open_session, running, send
from tests.surface_callers import ARGS_SURFACES, TEXT_SURFACES, Outcome, Refused

LIMIT = 4096
"""The agentools' `max_input_bytes`: room for nesting deeper than pydantic parses, small to exceed."""
MESSAGE_BOUND = 2_000
MCP_BOUND = 4_000
MB = 1024 * 1024

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


@pytest.fixture(autouse=True)
def agentools() -> None:
    ran.clear()
    routes = RoutingConfig(operation_map={'add': 'add', 'div': 'div'})
    create_agentool('sum', SumInput, routes, [add, div], max_input_bytes=LIMIT)
    create_agentool('sum_graph', SumInput, routes, [add, div], max_input_bytes=LIMIT, lean=False)


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
    'NaN': Case('{"operation": "add", "a": NaN, "b": 1}', InputValidationError, field_problem('a', 'finite_number')),
    'Infinity': Case(
        '{"operation": "add", "a": Infinity, "b": 1}', InputValidationError, field_problem('a', 'finite_number')
    ),
    '-Infinity': Case(
        '{"operation": "add", "a": -Infinity, "b": 1}', InputValidationError, field_problem('a', 'finite_number')
    ),
    '1e400': Case(
        '{"operation": "add", "a": 1e400, "b": 1}', InputValidationError, field_problem('a', 'finite_number')
    ),
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


def _made(case: Case) -> list[str]:
    """The tool calls a case makes, through the reference and the surface."""
    return [] if case.kind else ['add', 'add']


@pytest.mark.parametrize(('surface', 'case'), TEXT_CELLS, ids=[f'{s}-{c}' for s, c in TEXT_CELLS])
async def test_a_prompt_is_refused_alike_on_every_surface(surface: str, case: str) -> None:
    spec, name = CASES[case], GRAPH.get(surface, 'sum')
    if surface == 'dispatch' and (spec.kind in (InvalidJSONError, NotAnObjectError) or spec.prompt[:1] != '{'):
        pytest.skip('a JSON rule declines text that is no JSON object (tests/test_dispatch_hostile.py)')
    expected = await TEXT_SURFACES['injector.call'](name, spec.prompt)
    _as_expected(spec, expected)
    got = await (TEXT_SURFACES['agent.run'] if surface in GRAPH else TEXT_SURFACES[surface])(name, spec.prompt)
    _same_refusal(surface, got, expected)
    assert ran == _made(spec)  # bad input never reaches the tool


@pytest.mark.parametrize(('surface', 'case'), ARGS_CELLS, ids=[f'{s}-{c}' for s, c in ARGS_CELLS])
async def test_tool_arguments_are_refused_alike_on_every_surface(surface: str, case: str) -> None:
    spec = CASES[case]
    operation, arguments = spec.args() or ('', {})
    expected = await ARGS_SURFACES['injector.run (dict)']('sum', operation, arguments)
    _as_expected(spec, expected)
    got = await ARGS_SURFACES[surface]('sum', operation, arguments)
    _same_refusal(surface, got, expected, MCP_BOUND if surface == 'MCP' else MESSAGE_BOUND)
    assert ran == _made(spec)


@pytest.mark.parametrize('surface', TEXT_SURFACES)
async def test_the_default_limit_is_one_mebibyte_inclusive(surface: str) -> None:
    create_agentool(
        'sum', SumInput, RoutingConfig(operation_map={'add': 'add', 'div': 'div'}), [add, div], replace=True
    )
    assert get_registry().require('sum').max_input_bytes == MB
    assert not isinstance(await TEXT_SURFACES[surface]('sum', sized(MB)), Refused)
    expected = await TEXT_SURFACES['injector.call']('sum', sized(MB + 1))
    assert isinstance(expected, Refused)
    assert expected.details == {'agentool': 'sum', 'size': MB + 1, 'limit': MB}
    assert 'max_input_bytes' in expected.message
    _same_refusal(surface, await TEXT_SURFACES[surface]('sum', sized(MB + 1)), expected)
    assert ran == ['add']  # the refused prompts never reached the tool


async def test_every_refusal_is_an_invalid_input_error_and_a_value_error() -> None:
    with pytest.raises(InputTooLargeError) as caught:
        await get_injector().call('sum', sized(LIMIT + 1))
    assert isinstance(caught.value, InvalidInputError)
    assert isinstance(caught.value, AgenToolError)
    assert isinstance(caught.value, ValueError)


HEAVY = os.environ.get('AGENTOOL_FUZZ') == '1'
"""`make fuzz`: more examples."""


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


def prompt_of_size(n_bytes: int, char: str = 'x') -> str:
    """A valid echo prompt of exactly `n_bytes` UTF-8 bytes (`char` must be one byte)."""
    frame = '{"operation": "echo", "text": ""}'
    return frame[:-2] + char * (n_bytes - len(frame)) + '"}'


@pytest.fixture(autouse=True)
def clear_calls() -> None:
    CALLS.clear()


@pytest.mark.parametrize('surface', TEXT_SURFACES)
async def test_each_agentool_has_its_own_limit(surface: str) -> None:
    create_echo('small', max_input_bytes=50)
    create_echo('large', max_input_bytes=500)
    prompt = prompt_of_size(100)
    refused = await TEXT_SURFACES[surface]('small', prompt)
    assert isinstance(refused, Refused)
    assert 'max_input_bytes' in refused.message
    assert not isinstance(await TEXT_SURFACES[surface]('large', prompt), Refused)
    assert [100 - len('{"operation": "echo", "text": ""}')] == CALLS


async def test_plain_agent_follows_a_replaced_limit() -> None:
    """The plain form finds its agentool at request time, so a replacement's limit applies at once."""
    create_echo(max_input_bytes=50)
    plain = Agent('agentool:echo', output_type=int)
    prompt = prompt_of_size(100)
    with pytest.raises(InputTooLargeError):
        await plain.run(prompt)
    create_echo(max_input_bytes=200, replace=True)
    assert (await plain.run(prompt)).output == 100 - len('{"operation": "echo", "text": ""}')


@pytest.mark.parametrize('replacement', ['value', 'function'])
async def test_an_override_keeps_the_limit(replacement: str) -> None:
    create_echo(max_input_bytes=50)
    injector = get_injector()
    stub: Any = 7 if replacement == 'value' else (lambda input: 7)
    with injector.override(echo=stub):
        assert await injector.call('echo', '{"operation": "echo"}') == 7
        for how in (injector.call, injector.run):
            with pytest.raises(InputTooLargeError):
                await how('echo', prompt_of_size(100))


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


def test_a_deeply_nested_value_is_walked_without_recursion() -> None:
    deep: Any = float('nan')
    for _ in range(5000):
        deep = [deep]
    with pytest.raises(Exception, match='finite number'):
        SizeInput.model_validate({'operation': 'size', 'value': deep})


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
        (
            '{"operation": "add", "a": ' + '9' * 5000 + ', "b": 1}',
            (1, 4328),
        ),  # an integer too long (where pydantic stops)
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
    assert {k: caught.value.details[k] for k in ('position', 'line', 'column')} == {
        'position': 16,
        'line': 2,
        'column': 3,
    }
