"""Bad input out of `agent.run`: at once, before any tool call, and a JSON error says where.

Which typed error each bad input raises, alike on every surface, is the matrix in
tests/test_hostile_input.py; what is here is the run's own behaviour and the JSON error's position.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic_ai import capture_run_messages

from agentool import InputValidationError, InvalidInputError, InvalidJSONError, get_injector
from examples.calculator import create_calculator


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


async def test_invalid_json_reports_its_position() -> None:
    calculator = create_calculator()
    with pytest.raises(InvalidJSONError) as caught:
        await calculator.run('{"operation": "add", "a": 1,, "b": 2}')
    assert caught.value.details['position'] == 28
    assert (caught.value.details['line'], caught.value.details['column']) == (1, 29)
    assert 'calculator' in str(caught.value)
    assert 'char 28' in str(caught.value)


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
