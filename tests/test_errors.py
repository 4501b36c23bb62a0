"""The exception tree `agentool.errors` draws in its docstring is the tree its classes form, and an
error's message and details stay short whatever a caller sends (bounded error text).
"""

from __future__ import annotations

import json
import pickle
import re
from typing import Literal

import pytest
from mcp import Client, MCPError

from agentool import AgenToolRegistry, BaseOperationInput, RoutingConfig, create_agentool, errors
from agentool.cli import main
from agentool.core.injector import get_injector
from agentool.errors import (
    MAX_DETAIL_CHARS,
    MAX_MESSAGE_CHARS,
    AgenToolError,
    AgenToolNotFoundError,
    InputValidationError,
    UnknownOperationError,
    clip,
    quote,
)
from agentool.mcp import create_mcp_server
from examples.calculator import create_calculator

_BUILTINS = {cls.__name__: cls for cls in (ValueError, LookupError, ImportError, AssertionError)}
_LINE = re.compile(r'^(?P<indent>[ │├└─]*)(?P<name>\w+)(?: \[(?P<builtin>\w+)\])?')


def _drawn() -> dict[str, tuple[str | None, str | None]]:
    """Each drawn class → (its drawn parent, its drawn built-in base)."""
    doc = errors.__doc__ or ''
    lines = doc.split('    AgenToolError\n', 1)[1].split('\n\n', 1)[0].splitlines()
    drawn: dict[str, tuple[str | None, str | None]] = {'AgenToolError': (None, None)}
    stack: list[tuple[int, str]] = [(0, 'AgenToolError')]
    for line in lines:
        match = _LINE.match(line.removeprefix('    '))
        assert match, line
        depth = len(match['indent']) // 4
        while stack and stack[-1][0] >= depth:
            stack.pop()
        drawn[match['name']] = (stack[-1][1], match['builtin'])
        stack.append((depth, match['name']))
    return drawn


def _classes() -> dict[str, type[errors.AgenToolError]]:
    return {
        name: value
        for name in errors.__all__
        if isinstance(value := getattr(errors, name), type) and issubclass(value, errors.AgenToolError)
    }


def test_every_error_class_is_drawn_once() -> None:
    assert sorted(_drawn()) == sorted(_classes())


@pytest.mark.parametrize('name', sorted(_classes()))
def test_each_error_has_its_drawn_parent_and_builtin(name: str) -> None:
    cls = _classes()[name]
    parent, builtin = _drawn()[name]
    agentool_bases = [base for base in cls.__bases__ if issubclass(base, errors.AgenToolError)]
    other_bases = [base for base in cls.__bases__ if not issubclass(base, errors.AgenToolError)]
    if parent is None:
        assert cls.__bases__ == (Exception,)
        return
    assert [base.__name__ for base in agentool_bases] == [parent]  # one agentool parent: no diamond
    assert other_bases == ([_BUILTINS[builtin]] if builtin else [])


def test_missing_deps_is_deps_unavailable_not_a_wiring_error() -> None:
    assert issubclass(errors.MissingDepsError, errors.DepsUnavailableError)
    assert not issubclass(errors.MissingDepsError, errors.DependencyError)


HUGE = 'x' * 1_000_000


def _assert_bounded(error: AgenToolError) -> None:
    assert len(str(error)) <= MAX_MESSAGE_CHARS
    assert len(json.dumps(error.details, default=repr)) < 20_000


def test_quote_cuts_a_long_value_and_states_its_length() -> None:
    assert quote('serch') == "'serch'"
    assert quote(HUGE) == repr('x' * 120) + '... (1,000,000 characters)'
    assert quote(HUGE.encode(), 10) == repr(b'x' * 10) + '... (1,000,000 bytes)'
    assert len(quote({'k': [HUGE] * 1000})) < 400
    assert clip('short') == 'short'
    assert clip(HUGE, 5) == 'xxxxx... (1,000,000 characters)'


def test_every_message_and_detail_string_is_bounded_by_the_base_class() -> None:
    error = AgenToolError(HUGE, agentool=HUGE, value=HUGE, nested={'a': [HUGE] * 1000}, raw=HUGE.encode())
    assert len(error.message) == len(str(error)) == MAX_MESSAGE_CHARS
    assert error.message.endswith('... (message cut: 1,000,000 characters)')
    assert error.details['value'] == clip(HUGE, MAX_DETAIL_CHARS)
    assert 1 <= len(error.details['nested']['a']) < 100
    assert error.agentool is not None
    assert len(error.agentool) < 2 * MAX_DETAIL_CHARS
    _assert_bounded(error)
    back = pickle.loads(pickle.dumps(error))
    assert (type(back), back.message, back.details) == (AgenToolError, error.message, error.details)


def test_ordinary_details_are_kept_as_given() -> None:
    errors = [{'loc': ['x'], 'msg': 'Field required', 'type': 'missing'}]
    error = InputValidationError('invalid', agentool='a', errors=errors)
    assert error.details == {'agentool': 'a', 'errors': errors}
    assert error.errors == errors


async def test_a_megabyte_operation_is_quoted_briefly_on_run_and_call() -> None:
    agent = create_calculator()
    prompt = json.dumps({'operation': HUGE, 'a': 1, 'b': 2})
    with pytest.raises(UnknownOperationError) as on_run:
        await agent.run(prompt)
    with pytest.raises(UnknownOperationError) as on_call:
        await get_injector().call('calculator', {'operation': HUGE, 'a': 1, 'b': 2})
    for caught in (on_run, on_call):
        _assert_bounded(caught.value)
        assert '(1,000,000 characters)' in str(caught.value)


def test_a_megabyte_agentool_name_is_quoted_briefly(registry: AgenToolRegistry) -> None:
    create_calculator()
    with pytest.raises(AgenToolNotFoundError) as caught:
        registry.require(HUGE)
    _assert_bounded(caught.value)
    assert '(1,000,000 characters)' in str(caught.value)


@pytest.mark.parametrize(
    'argv',
    [
        ['show', HUGE],
        ['call', HUGE, '{}'],
        ['call', 'calculator', json.dumps({'operation': HUGE, 'a': 1, 'b': 2})],
        ['call', 'calculator', json.dumps({'operation': 'add', HUGE: 1, 'a': 1, 'b': 2})],
        ['schema', 'calculator', '--operation', HUGE],
    ],
    ids=['show', 'call-agentool', 'call-operation', 'call-field', 'schema-operation'],
)
def test_the_cli_writes_one_short_line_for_a_megabyte_name(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    create_calculator()
    assert main(argv) == 1
    out, err = capsys.readouterr()
    assert out == ''
    assert len(err) < 2000
    assert err.count('\n') == 1
    assert '1,000,000 characters' in err


def test_a_cli_usage_error_with_a_megabyte_word_is_short(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main([HUGE])
    assert caught.value.code == 2
    assert len(capsys.readouterr().err) < 2000


async def test_mcp_replies_to_a_megabyte_tool_name_briefly() -> None:
    create_calculator()
    async with Client(create_mcp_server()) as client:  # pyright: ignore[reportArgumentType]
        with pytest.raises(MCPError) as caught:
            await client.call_tool(HUGE, {})
        result = await client.call_tool('calculator_add', {'a': 1, 'b': 2, HUGE: 1})
    error = caught.value.error
    assert len(error.message) + len(json.dumps(error.data)) < 4000
    assert '(1,000,000 characters)' in error.message
    assert result.is_error
    text = result.content[0].model_dump()['text']
    assert len(text) < 2000
    assert '(1,000,000 characters)' in text


async def test_mcp_cuts_a_failed_calls_exception_text() -> None:
    class LoudInput(BaseOperationInput):
        operation: Literal['shout']

    async def shout() -> str:
        raise RuntimeError(HUGE)

    create_agentool('loud', LoudInput, RoutingConfig(operation_map={'shout': 'shout'}), [shout])
    async with Client(create_mcp_server()) as client:  # pyright: ignore[reportArgumentType]
        result = await client.call_tool('loud_shout', {})
    assert result.is_error
    text = result.content[0].model_dump()['text']
    assert text.startswith("tool 'loud_shout' (agentool 'loud', operation 'shout') failed: RuntimeError: xxx")
    assert len(text) < 4000
