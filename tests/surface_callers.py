"""Callers from outside the injector, shared by the tests that reach one agentool through every surface."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel


def tool_caller(tool: str, args: dict[str, Any]) -> FunctionModel:
    """An LLM stand-in: calls `tool` once, then answers with what it returned."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returned = [p for m in messages for p in m.parts if isinstance(p, ToolReturnPart)]
        if returned:
            return ModelResponse(parts=[TextPart(json.dumps(returned[-1].content))])
        return ModelResponse(parts=[ToolCallPart(tool, args)])

    return FunctionModel(respond)


async def over_mcp(tool: str, args: dict[str, Any]) -> Any:
    """The structured result of MCP tool `tool` of a server over the registry in effect (an in-memory client)."""
    pytest.importorskip('mcp')
    from mcp import Client

    from agentool.mcp import create_mcp_server

    async with Client(create_mcp_server(), mode='auto') as client:  # pyright: ignore[reportArgumentType]
        result = await client.call_tool(tool, args)
    assert not result.is_error, result
    return (result.structured_content or {})['result']
