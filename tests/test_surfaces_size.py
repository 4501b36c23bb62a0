"""`max_input_bytes` (and input JSON cannot carry) on MCP and the LLM toolset: refused exactly when a run refuses it.

A run measures the JSON text it is given, in UTF-8 bytes; the surfaces build that text from a
tool's arguments and the operation, as `injector.run` does from a dict, and refuse it with the
agentool's own `InputTooLargeError` (MCP: an error result; the toolset: a retry for the model).
"""

from __future__ import annotations

from typing import Any, Literal

import pytest
from mcp import Client
from pydantic import ValidationError, field_validator
from pydantic_ai import Agent, RunContext
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel
from pydantic_ai.usage import RunUsage
from pydantic_core import to_json

from agentool import (
    AgenToolToolset,
    BaseOperationInput,
    InputTooLargeError,
    InvalidInputError,
    RoutingConfig,
    create_agentool,
)
from agentool.core.injector import get_injector
from agentool.mcp import create_mcp_server

LIMIT = 100


class EchoInput(BaseOperationInput):
    operation: Literal['echo']
    text: str


async def echo(text: str) -> str:
    return text


@pytest.fixture(autouse=True)
def agentool() -> None:
    create_agentool('s', EchoInput, RoutingConfig(operation_map={'echo': 'echo'}), [echo], max_input_bytes=LIMIT)


def payload(size: int, char: str = 'y') -> dict[str, Any]:
    """Arguments whose run input (the compact JSON text a run is given) is exactly `size` bytes."""
    base = len(to_json({'text': '', 'operation': 'echo'}))
    count, rest = divmod(size - base, len(char.encode()))
    return {'text': char * count + 'y' * rest}


async def run_refusal(arguments: dict[str, Any]) -> InputTooLargeError | None:
    """What `injector.run` says of these arguments as the operation's input: its error, or None."""
    try:
        await get_injector().run('s', {**arguments, 'operation': 'echo'})
    except InputTooLargeError as error:
        return error
    return None


async def test_mcp_refuses_input_over_the_limit_with_the_agentools_error() -> None:
    arguments = {'text': 'y' * 500}
    expected = await run_refusal(arguments)
    assert expected is not None
    async with Client(create_mcp_server()) as client:  # pyright: ignore[reportArgumentType]
        result = await client.call_tool('s_echo', arguments)
        fine = await client.call_tool('s_echo', {'text': 'y'})
    assert result.is_error
    assert result.content[0].model_dump()['text'] == (
        f"invalid arguments for tool 's_echo' (agentool 's', operation 'echo'): InputTooLargeError: {expected.message}"
    )
    assert fine.structured_content == {'result': 'y'}


def retries(messages: list[ModelMessage]) -> list[ToolReturnPart]:
    last = messages[-1]
    assert isinstance(last, ModelRequest)
    return [p for p in last.parts if isinstance(p, ToolReturnPart) and p.outcome == 'retried']


async def test_the_toolset_asks_the_model_again_with_the_agentools_error() -> None:
    arguments = {'text': 'y' * 500}
    expected = await run_refusal(arguments)
    assert expected is not None
    seen: list[list[ModelMessage]] = []
    ran: list[str] = []

    def llm(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(list(messages))
        if len(seen) == 1:
            return ModelResponse(parts=[ToolCallPart('s_echo', arguments)])
        if len(seen) == 2:
            return ModelResponse(parts=[ToolCallPart('s_echo', {'text': 'short'})])
        ran.extend(str(p.content) for p in messages[-1].parts if isinstance(p, ToolReturnPart))
        return ModelResponse(parts=[TextPart('done')])

    agent = Agent(FunctionModel(llm), toolsets=[AgenToolToolset()])
    assert (await agent.run('go')).output == 'done'
    (retry,) = retries(seen[1])
    assert isinstance(retry.content, list)
    assert [(e['type'], e['loc'], e['msg']) for e in retry.content] == [('input_too_large', [], expected.message)]
    assert ran == ['short']  # the tool ran once, on the input that fits


async def toolset_verdict(arguments: dict[str, Any]) -> InputTooLargeError | None:
    """What the toolset's argument validator says: the error it carries, or None when it accepts."""
    tools = await AgenToolToolset[Any]().get_tools(RunContext[Any](deps=None, model=TestModel(), usage=RunUsage()))
    try:
        tools['s_echo'].args_validator.validate_python(arguments)
    except ValidationError as error:
        (detail,) = error.errors()
        assert detail['type'] == 'input_too_large'
        return InputTooLargeError(detail['msg'], **detail.get('ctx', {}))
    return None


async def mcp_verdict(arguments: dict[str, Any]) -> str | None:
    async with Client(create_mcp_server()) as client:  # pyright: ignore[reportArgumentType]
        result = await client.call_tool('s_echo', arguments)
    return result.content[0].model_dump()['text'] if result.is_error else None


@pytest.mark.parametrize('char', ['y', 'é', '€', '😀'])
@pytest.mark.parametrize('size', [LIMIT - 1, LIMIT, LIMIT + 1, LIMIT + 3])
async def test_the_limit_is_the_runs_in_utf8_bytes_on_every_surface(size: int, char: str) -> None:
    arguments = payload(size, char)
    assert len(to_json({**arguments, 'operation': 'echo'})) == size
    expected = await run_refusal(arguments)
    assert (expected is not None) == (size > LIMIT)
    toolset = await toolset_verdict(arguments)
    mcp = await mcp_verdict(arguments)
    if expected is None:
        assert (toolset, mcp) == (None, None)
    else:
        assert toolset is not None
        assert toolset.message == expected.message
        assert toolset.details == expected.details
        assert mcp is not None
        assert mcp.endswith(f'InputTooLargeError: {expected.message}')


async def test_arguments_json_cannot_carry_are_refused_as_a_run_refuses_them() -> None:
    # A model's arguments given as a dict may hold a lone surrogate, which no JSON text (so no run's
    # input) can: `injector.run` refuses that dict with a typed error, and so does the toolset.
    arguments = {'text': '\ud800'}
    with pytest.raises(InvalidInputError) as caught:
        await get_injector().run('s', {**arguments, 'operation': 'echo'})
    tools = await AgenToolToolset[Any]().get_tools(RunContext[Any](deps=None, model=TestModel(), usage=RunUsage()))
    with pytest.raises(ValidationError) as refused:
        tools['s_echo'].args_validator.validate_python(arguments)
    (detail,) = refused.value.errors()
    assert (detail['type'], detail['msg']) == ('invalid_input', caught.value.message)


class BracedInput(BaseOperationInput):
    operation: Literal['echo']
    text: str

    @field_validator('text')
    @classmethod
    def _no_x(cls, value: str) -> str:
        if value == 'x':
            raise ValueError('use {a} template like {this}')
        return value


async def test_a_field_message_with_braces_is_shown_as_written() -> None:
    create_agentool('braced', BracedInput, RoutingConfig(operation_map={'echo': 'echo'}), [echo])
    async with Client(create_mcp_server()) as client:  # pyright: ignore[reportArgumentType]
        result = await client.call_tool('braced_echo', {'text': 'x'})
    assert result.is_error
    text = result.content[0].model_dump()['text']
    assert 'use {a} template like {this}' in text
    assert '{{' not in text
    tools = await AgenToolToolset[Any]().get_tools(RunContext[Any](deps=None, model=TestModel(), usage=RunUsage()))
    with pytest.raises(ValidationError) as raised:
        # With a second problem (the operation given again), the errors are merged into a new list.
        tools['braced_echo'].args_validator.validate_python({'text': 'x', 'operation': 'echo'})
    messages = [error['msg'] for error in raised.value.errors()]
    assert 'Value error, use {a} template like {this}' in messages
