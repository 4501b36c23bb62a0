"""Bad input raises a typed error out of `agent.run`, at once, naming the problem."""

from __future__ import annotations

import json
from functools import partial
from typing import Any

import pytest
from pydantic_ai import Agent, capture_run_messages

from agentool import (
    AgenToolError,
    InputTooLargeError,
    InputValidationError,
    InvalidInputError,
    InvalidJSONError,
    NotAnObjectError,
    RoutingConfig,
    UnknownOperationError,
    create_agentool,
    get_injector,
)
from examples.calculator import create_calculator
from tests.agentools import CalcInput, EchoInput, echo, echo_routing, make_calc


async def test_invalid_json_reports_its_position() -> None:
    calculator = create_calculator()
    with pytest.raises(InvalidJSONError) as caught:
        await calculator.run('{"operation": "add", "a": 1,, "b": 2}')
    assert caught.value.details['position'] == 28
    assert (caught.value.details['line'], caught.value.details['column']) == (1, 29)
    assert 'calculator' in str(caught.value)
    assert 'char 28' in str(caught.value)


@pytest.mark.parametrize(('prompt', 'kind'), [('[1, 2]', 'an array'), ('"add"', 'a string'), ('42', 'a number')])
async def test_json_that_is_not_an_object(prompt: str, kind: str) -> None:
    calculator = create_calculator()
    with pytest.raises(NotAnObjectError, match=kind) as caught:
        await calculator.run(prompt)
    assert caught.value.details['json_type'] == kind


async def test_unknown_operation_lists_the_known_ones() -> None:
    calculator = create_calculator()
    with pytest.raises(UnknownOperationError) as caught:
        await calculator.run('{"operation": "power", "a": 2, "b": 3}')
    assert caught.value.details['operation'] == 'power'
    assert caught.value.details['known'] == ['add', 'subtract', 'multiply', 'divide']
    assert "'power'" in str(caught.value)


@pytest.mark.parametrize(
    ('payload', 'field', 'error_type'),
    [
        ({'operation': 'add', 'a': 1}, 'b', 'missing'),
        ({'operation': 'add', 'a': 'one', 'b': 2}, 'a', 'float_parsing'),
        ({'operation': 'add', 'a': 1, 'b': 2, 'c': 3}, 'c', 'extra_forbidden'),
        ({'a': 1, 'b': 2}, 'operation', 'missing'),
    ],
)
async def test_field_problems_name_the_field(payload: dict[str, Any], field: str, error_type: str) -> None:
    calculator = create_calculator()
    with pytest.raises(InputValidationError) as caught:
        await calculator.run(json.dumps(payload))
    error = caught.value
    assert [(e['loc'], e['type']) for e in error.errors] == [([field], error_type)]
    assert f"field '{field}'" in str(error)
    assert 'calculator' in str(error)
    json.dumps(error.details)  # structured details are JSON-safe


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


async def test_oversized_input_is_refused_before_parsing() -> None:
    calculator = create_calculator()
    huge = '{"operation": "add", "a": 1, "b": 2, "pad": "' + 'x' * (2 * 1024 * 1024) + '"}'
    with pytest.raises(InputTooLargeError) as caught:
        await calculator.run(huge)
    assert caught.value.details['limit'] == 1024 * 1024


async def test_deeply_nested_input_fails_cleanly() -> None:
    calculator = create_calculator()
    nested = '{"operation": "add", "a": 1, "b": ' + '[' * 10_000 + ']' * 10_000 + '}'
    with pytest.raises(InvalidInputError):
        await calculator.run(nested)


async def test_unterminated_deep_nesting_fails_cleanly() -> None:
    calculator = create_calculator()
    with pytest.raises(InvalidJSONError):
        await calculator.run('[' * 10_000)


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


@pytest.mark.parametrize('number', ['NaN', 'Infinity', '-Infinity', '1e400'])
async def test_a_number_json_has_not_is_refused_before_the_tool(number: str) -> None:
    calculator = create_calculator()
    with pytest.raises(InputValidationError) as caught:
        await calculator.run(f'{{"operation": "add", "a": {number}, "b": 1}}')
    assert [(e['loc'], e['type']) for e in caught.value.details['errors']] == [(['a'], 'finite_number')]


async def test_bytes_that_are_not_utf8_report_line_and_column() -> None:
    create_calculator()
    with pytest.raises(InvalidJSONError) as caught:
        await get_injector().call('calculator', b'{"operation":\n "\xff"}')
    assert {k: caught.value.details[k] for k in ('position', 'line', 'column')} == {
        'position': 16,
        'line': 2,
        'column': 3,
    }


async def test_plain_agent_raises_the_same_typed_errors() -> None:
    create_calculator()
    plain = Agent('agentool:calculator')
    with pytest.raises(UnknownOperationError):
        await plain.run('{"operation": "power", "a": 2, "b": 3}')
    with pytest.raises(InvalidJSONError):
        await plain.run('not json')


async def test_every_error_is_an_agentool_error() -> None:
    calculator = create_calculator()
    for prompt in ['', '{', 'null', '{"operation": 1}', '{"operation": "add", "a": [], "b": {}}']:
        with pytest.raises(AgenToolError):
            await calculator.run(prompt)


def test_unknown_operation_details() -> None:
    agent = create_agentool('unknown', EchoInput, echo_routing(), [echo])
    with pytest.raises(UnknownOperationError) as raised:
        agent.run_sync('{"operation": "nope"}')
    assert raised.value.details['known'] == ['echo']


BAD_INPUTS = [
    ('{"operation": "add", "a": 5', InvalidJSONError, {'position': 27, 'line': 1, 'column': 28}),
    ('{"operation": "pow", "a": 1, "b": 2}', UnknownOperationError, {'operation': 'pow', 'known': ['add', 'div']}),
    ('{"operation": "add", "a": 1}', InputValidationError, {'operation': 'add'}),
    ('{"operation": "add", "a": "x", "b": 2}', InputValidationError, {'operation': 'add'}),
    ('{"operation": "add", "a": 1, "b": 2, "c": 3}', InputValidationError, {'operation': 'add'}),
]


@pytest.mark.parametrize(('prompt', 'kind', 'details'), BAD_INPUTS)
@pytest.mark.parametrize('form', ['create_agentool', 'model string', 'injector'])
async def test_bad_input_is_a_typed_invalid_input_error_straight_out_of_run(
    prompt: str, kind: type[InvalidInputError], details: dict[str, Any], form: str
) -> None:
    calls: list[float] = []

    async def spy(a: float, b: float) -> float:
        calls.append(a)
        return a

    config = RoutingConfig(operation_map={'add': 'spy', 'div': 'spy'})
    agent = create_agentool('calc', CalcInput, config, [spy])
    runs = {
        'create_agentool': agent.run,
        'model string': Agent('agentool:calc', output_type=float).run,
        'injector': partial(get_injector().call, 'calc'),
    }
    with pytest.raises(kind) as caught:
        await runs[form](prompt)
    assert isinstance(caught.value, InvalidInputError)
    assert {'agentool': 'calc', **details}.items() <= caught.value.details.items()
    assert calls == []  # bad input never reaches the tool (docs/index.md)


@pytest.mark.parametrize(
    ('prompt', 'field'),
    [
        ('{"operation": "add", "a": 1}', 'b'),
        ('{"operation": "add", "a": "x", "b": 2}', 'a'),
        ('{"operation": "add", "a": 1, "b": 2, "c": 3}', 'c'),
    ],
)
def test_a_field_error_names_the_agentool_the_operation_and_the_field(prompt: str, field: str) -> None:
    with pytest.raises(InputValidationError) as caught:
        make_calc().run_sync(prompt)
    assert (caught.value.details['agentool'], caught.value.details['operation']) == ('calc', 'add')
    assert [error['loc'] for error in caught.value.details['errors']] == [[field]]
    assert f"field '{field}'" in str(caught.value)
