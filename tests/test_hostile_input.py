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
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Literal

import pytest
from pydantic_core import from_json, to_json

from agentool import (
    AgenToolError,
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
)
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
