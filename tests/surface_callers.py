"""Callers from outside the injector, shared by the tests that reach one agentool through every surface.

`TEXT_SURFACES` and `ARGS_SURFACES` are every surface as one signature, each answer either what the
surface returned or a `Refused` (the error as that surface shows it): the cross-surface matrix of
hostile input (tests/test_hostile_input.py) runs each input through all of them.
"""

from __future__ import annotations

import asyncio
import builtins
import io
import json
import re
from collections.abc import Awaitable, Callable
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from typing import Any, cast

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_core import to_json

from agentool import AgenToolCapability, AgenToolError, AgenToolToolset, get_injector


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


# --- every surface, as one signature: what a caller gets back for one input --------------------------


@dataclass(frozen=True)
class Refused:
    """A surface's refusal as its caller sees it: the error class, its message, and the whole text shown.

    `details` is the error's structured details where the surface hands over the error object itself
    (`None` for the CLI, MCP and the toolset, which show text or pydantic's error list).
    """

    kind: str
    message: str
    text: str
    details: dict[str, Any] | None = None
    errors: list[dict[str, Any]] | None = None
    """pydantic's error list, where the surface reports a field problem as one (the toolset, the error)."""


Outcome = Refused | Any
"""A `Refused`, or whatever the surface answered."""

TextSurface = Callable[[str, str], Awaitable[Outcome]]
"""Hands agentool `name` a prompt (JSON text)."""
ArgsSurface = Callable[[str, str, dict[str, Any]], Awaitable[Outcome]]
"""Calls operation `operation` of agentool `name` with tool arguments (a dict), as a client or an LLM does."""


def _refused(error: AgenToolError) -> Refused:
    return Refused(
        type(error).__name__, error.message, str(error), error.details, getattr(error, 'errors', None) or None
    )


async def _raising(attempt: Callable[[], Awaitable[Any]]) -> Outcome:
    """What `attempt()` answers, or the `Refused` of the agentool error it raises, on the call or the await."""
    try:
        return await attempt()
    except AgenToolError as error:
        return _refused(error)


async def _agent_run(name: str, prompt: str) -> Outcome:
    return await _raising(lambda: _output(get_injector().get(name).run(prompt)))


async def _output(run: Awaitable[Any]) -> Any:
    return (await run).output


async def _run_stream(name: str, prompt: str) -> Outcome:
    async def stream() -> Any:
        async with get_injector().get(name).run_stream(prompt) as result:
            return await result.get_output()

    return await _raising(stream)


async def _model_string(name: str, prompt: str) -> Outcome:
    # The model string is read when the agent is made: a bad name raises there.
    return await _raising(lambda: _output(Agent(f'agentool:{name}').run(prompt)))


async def _model_string_with_capability(name: str, prompt: str) -> Outcome:
    return await _raising(
        lambda: _output(Agent(f'agentool:{name}', capabilities=[AgenToolCapability(name)]).run(prompt))
    )


async def _injector_call(name: str, prompt: str | dict[str, Any]) -> Outcome:
    return await _raising(lambda: get_injector().call(name, prompt))


async def _injector_run(name: str, prompt: str | dict[str, Any]) -> Outcome:
    return await _raising(lambda: _output(get_injector().run(name, prompt)))


def _cli(name: str, prompt: str) -> Outcome:
    from agentool.cli import main

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        status = main(['call', name, prompt])
    if status == 0:
        return json.loads(out.getvalue())
    text = out.getvalue() + err.getvalue()
    assert status == 1, f'exit status {status}: {text[:500]}'
    message = err.getvalue().removeprefix('agentool: error: ').removesuffix('\n')
    foreign = re.match(r'(\w+): ', message)  # how the CLI reports an exception that is not agentool's
    assert not (foreign and isinstance(getattr(builtins, foreign.group(1), None), type)), text[:500]
    return Refused('', message, text)  # the CLI shows the message, not the class


async def _cli_call(name: str, prompt: str) -> Outcome:
    return await asyncio.to_thread(_cli, name, prompt)  # `main` runs its own event loop


def _model_answering(respond: Callable[[list[ModelMessage]], ModelResponse]) -> FunctionModel:
    return FunctionModel(lambda messages, info: respond(messages))


async def _dispatch(name: str, prompt: str) -> Outcome:
    from agentool.dispatch import DispatchCapability, JsonRule

    model = _model_answering(lambda messages: ModelResponse(parts=[TextPart('the model')]))
    agent = Agent(model, capabilities=[DispatchCapability([JsonRule(agentool=name)])])
    return await _raising(lambda: _output(agent.run(prompt)))


async def _injector_call_dict(name: str, operation: str, args: dict[str, Any]) -> Outcome:
    return await _injector_call(name, {**args, 'operation': operation})


async def _injector_run_dict(name: str, operation: str, args: dict[str, Any]) -> Outcome:
    return await _injector_run(name, {**args, 'operation': operation})


async def _mcp(name: str, operation: str, args: dict[str, Any]) -> Outcome:
    from mcp import Client, MCPError

    from agentool.mcp import create_mcp_server

    async with Client(create_mcp_server()) as client:  # pyright: ignore[reportArgumentType]
        try:
            result = await client.call_tool(f'{name}_{operation}', args)
        except MCPError as error:  # a protocol error: no such tool
            reply = error.error.message + json.dumps(error.error.data, ensure_ascii=False)
            return Refused('MCPError', error.error.message, reply)
    if not result.is_error:
        return (result.structured_content or {})['result']
    text = ''.join(str(part.model_dump().get('text', '')) for part in result.content)
    prefix = f"invalid arguments for tool '{name}_{operation}' (agentool '{name}', operation '{operation}'): "
    if not text.startswith(prefix):  # the tool failed
        return Refused('', text, text)
    kind, _, message = text.removeprefix(prefix).partition(': ')
    if not kind.endswith('Error'):  # field problems are listed without the class: InputValidationError's
        kind, message = 'InputValidationError', text.removeprefix(prefix)
    return Refused(kind, message, text)


async def llm_tool_call(tool: str, arguments: str) -> Outcome:
    """An LLM calling `tool` of `AgenToolToolset()` once with `arguments` (JSON text, as models send them).

    A refusal is the retry the model gets back (`errors`: its list); a run that raises, the error.
    """
    returned: list[ToolReturnPart] = []

    def respond(messages: list[ModelMessage]) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart(tool, arguments)])
        returned.extend(p for p in messages[-1].parts if isinstance(p, ToolReturnPart))
        return ModelResponse(parts=[TextPart('done')])

    agent = Agent(_model_answering(respond), toolsets=[AgenToolToolset()])
    if isinstance(ran := await _raising(lambda: agent.run('go')), Refused):
        return ran
    (part,) = returned
    if part.outcome != 'retried':
        return part.content
    errors = cast('list[dict[str, Any]]', part.content)
    text = '\n'.join(str(error['msg']) for error in errors)
    too_large = [error['type'] for error in errors] == ['input_too_large']
    kind = 'InputTooLargeError' if too_large else 'InputValidationError'
    return Refused(kind, text, text, errors=errors)


async def _toolset(name: str, operation: str, args: dict[str, Any]) -> Outcome:
    return await llm_tool_call(f'{name}_{operation}', to_json(args).decode())


TEXT_SURFACES: dict[str, TextSurface] = {
    'agent.run': _agent_run,
    'run_stream': _run_stream,
    'model string': _model_string,
    'model string + capability': _model_string_with_capability,
    'injector.call': _injector_call,
    'injector.run': _injector_run,
    'CLI call': _cli_call,
    'dispatch': _dispatch,
}
"""Every surface that takes a prompt, the JSON text of an input."""

ARGS_SURFACES: dict[str, ArgsSurface] = {
    'injector.call (dict)': _injector_call_dict,
    'injector.run (dict)': _injector_run_dict,
    'MCP': _mcp,
    'LLM toolset': _toolset,
}
"""Every surface that takes one operation's arguments as a dict (the toolset sends them as JSON text)."""
