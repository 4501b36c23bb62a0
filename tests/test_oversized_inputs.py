"""Size first: tens of megabytes are refused by their size, before anything parses them.

Each surface gets a 30 MB input for the calculator (limit: 1 MiB by default) and must refuse it with
`InputTooLargeError` (or its form on that surface). The time bound is a generous sanity check, not a
benchmark: parsing 30 MB of deeply nested JSON takes far longer, and would fail it.
"""

from __future__ import annotations

import io
import json
import sys
import time
from collections.abc import Generator
from contextlib import contextmanager
from typing import Any

import pytest
from pydantic import ValidationError
from pydantic_ai import Agent, RunContext
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel
from pydantic_ai.usage import RunUsage

from agentool import AgenToolRegistry
from agentool.cli import main
from agentool.errors import InputTooLargeError
from agentool.toolset import AgenToolToolset
from examples.calculator import create_calculator

# Nested arrays: quick to build, slow and memory-hungry to parse (what a hostile caller sends).
HUGE = '{"operation": "add", "a": 1, "b": 2, "x": ' + '[' * 15_000_000 + ']' * 15_000_000 + '}'
SANITY_SECONDS = 5.0


@contextmanager
def quickly() -> Generator[None]:
    start = time.perf_counter()
    yield
    assert time.perf_counter() - start < SANITY_SECONDS


def test_the_manager_refuses_by_size_before_parsing(registry: AgenToolRegistry) -> None:
    create_calculator()
    with quickly(), pytest.raises(InputTooLargeError) as caught:
        registry.get_manager('calculator').validate_json(HUGE)
    assert caught.value.details['size'] == len(HUGE)


async def test_a_run_refuses_by_size_before_parsing() -> None:
    agent = create_calculator()
    with quickly(), pytest.raises(InputTooLargeError):
        await agent.run(HUGE)


def test_the_cli_argument_is_refused_by_size(capsys: pytest.CaptureFixture[str]) -> None:
    create_calculator()
    with quickly():
        assert main(['call', 'calculator', HUGE]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"agentool: error: input to agentool 'calculator' is {len(HUGE)} bytes, over the limit")
    assert len(err) < 2000


def test_stdin_is_read_no_further_than_the_limit(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    create_calculator()
    raw = io.BytesIO(HUGE.encode())
    monkeypatch.setattr(sys, 'stdin', io.TextIOWrapper(raw, encoding='utf-8'))
    with quickly():
        assert main(['call', 'calculator', '-']) == 1
    assert raw.tell() <= 1024 * 1024 + 1 + io.DEFAULT_BUFFER_SIZE  # the rest was never read
    err = capsys.readouterr().err
    assert err.startswith("agentool: error: input to agentool 'calculator' on standard input is over the limit")


def test_stdin_that_is_not_utf8_is_a_typed_error(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    create_calculator()
    raw = io.BytesIO(b'{"operation": "add", "a": 1, "b": "\xff"}')
    monkeypatch.setattr(sys, 'stdin', io.TextIOWrapper(raw, encoding='utf-8'))
    assert main(['call', 'calculator', '-']) == 1
    assert capsys.readouterr().err.startswith("agentool: error: input to agentool 'calculator' is not valid JSON")


def test_stdin_within_the_limit_is_called(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    create_calculator()
    raw = io.BytesIO(json.dumps({'operation': 'add', 'a': 1, 'b': 2}).encode())
    monkeypatch.setattr(sys, 'stdin', io.TextIOWrapper(raw, encoding='utf-8'))
    assert main(['call', 'calculator', '-']) == 0
    assert capsys.readouterr().out.strip() == '3.0'


async def test_the_toolset_refuses_tool_call_arguments_by_size_before_parsing() -> None:
    create_calculator()
    arguments = HUGE.replace('"operation": "add", ', '')
    seen: list[list[ModelMessage]] = []

    def llm(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(list(messages))
        if len(seen) == 1:
            return ModelResponse(parts=[ToolCallPart('calculator_add', arguments)])
        return ModelResponse(parts=[TextPart('done')])

    # No time bound on the whole run: FunctionModel itself estimates tokens over the 30 MB.
    assert (await Agent(FunctionModel(llm), toolsets=[AgenToolToolset()]).run('go')).output == 'done'
    last = seen[1][-1]
    assert isinstance(last, ModelRequest)
    (retry,) = [p for p in last.parts if isinstance(p, ToolReturnPart)]
    assert retry.outcome == 'retried'
    assert isinstance(retry.content, list)
    assert [e['type'] for e in retry.content] == ['input_too_large']  # pyright: ignore[reportUnknownVariableType]


async def test_the_toolset_validator_refuses_by_size_quickly() -> None:
    create_calculator()
    ctx = RunContext[Any](deps=None, model=TestModel(), usage=RunUsage())
    validator = (await AgenToolToolset[Any]().get_tools(ctx))['calculator_add'].args_validator
    with quickly(), pytest.raises(ValidationError) as caught:
        validator.validate_json(HUGE.replace('"operation": "add", ', ''))
    assert [e['type'] for e in caught.value.errors()] == ['input_too_large']


async def test_mcp_refuses_tool_call_arguments_by_size_before_validating() -> None:
    from mcp import Client

    from agentool.mcp import create_mcp_server

    create_calculator()
    async with Client(create_mcp_server()) as client:  # pyright: ignore[reportArgumentType]
        with quickly():
            result = await client.call_tool('calculator_add', {'a': 1, 'b': 2, 'x': 'y' * 30_000_000})
    assert result.is_error
    text = result.content[0].model_dump()['text']
    assert 'InputTooLargeError' in text
    assert len(text) < 2000
