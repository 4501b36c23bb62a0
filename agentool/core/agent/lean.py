"""Lean runs: an agentool answers `agent.run` itself — validate, route, call — with no agent graph.

The result is an ordinary `AgentRunResult`, validated from pydantic-ai's public serialized shape
(`output`, `messages`, `usage`, `run_id`, …), holding the same messages the graph would produce:
the user prompt (after the agent's system prompt parts), the manager tool call and its return,
the final answer in the agent's output mode and, for an output tool, the framework's return.
Message templates come from the agent's first run through the graph (`LeanPlan`); ids and
timestamps are new. When and why a run is lean is decided by `AgenToolAgent`.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from pydantic import TypeAdapter, ValidationError
from pydantic_ai import AgentRunResult, ModelRetry, ToolFailed
from pydantic_ai.agent import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
    repair_messages,
)

from ..manager import MANAGER_TOOL_NAME
from ..model import AgenToolModel
from ..output import admits_none, output_parts
from ..registry import get_registry
from ..request import (
    active_dispatcher,
    call_args,
    context_base,
    direct_context,
    enter,
    failed_error,
    is_durable,
    leave,
    output_retry_error,
    retry_error,
)
from ._lean_plan import LeanPlan

__all__ = ('answer', 'history_allows_lean')


@functools.cache
def _result_adapter() -> TypeAdapter[AgentRunResult[Any]]:
    # Built on the first lean run: its schema spans every message type, too slow for import time.
    return TypeAdapter[AgentRunResult[Any]](AgentRunResult[Any])


def history_allows_lean(history: Sequence[ModelMessage]) -> bool:
    """Whether a run continuing `history` takes the two steps a lean run reproduces.

    The graph appends a new request after a history that ends with a request of output tool
    returns (a finished run in tool output mode) or a response without tool calls (text mode).
    Anything else is left to the graph: pending tool calls, a trailing user prompt, and a return of
    the manager tool (an unfinished run, which the model answers from that return, not the prompt).
    """
    if not history:
        return True
    last = history[-1]
    if isinstance(last, ModelResponse):
        return not any(isinstance(part, ToolCallPart) for part in last.parts)
    return bool(last.parts) and all(
        isinstance(part, ToolReturnPart) and part.tool_name != MANAGER_TOOL_NAME and part.outcome == 'success'
        for part in last.parts
    )


async def answer(
    plan: LeanPlan,
    model: AgenToolModel,
    agent: Agent[Any, Any],
    prompt: str,
    deps: Any,
    history: Sequence[ModelMessage] | None,
) -> AgentRunResult[Any]:
    """The run `agent.run(prompt, deps=deps, message_history=history)` would return, computed directly."""
    name = model.model_name
    manager = model.registry.get_manager(name)
    validated = manager.validate_json(prompt)  # the typed error the model raises in a run
    # The graph's own history cleanup (merging adjacent requests, among others), through its public form.
    history = repair_messages(history, repair_last_response=False) if history else []
    run_id = _uuid7()
    conversation_id = _conversation_id(history)
    responses = sum(isinstance(message, ModelResponse) for message in history)
    call_id, final_id = f'agentool_{name}_{responses}', f'agentool_{name}_{responses + 1}'
    now = datetime.now(UTC)
    ids = {'run_id': run_id, 'conversation_id': conversation_id}
    user = UserPromptPart(prompt, timestamp=now)
    parts: list[Any] = [user] if history else [*(part.make(timestamp=now) for part in plan.system_parts), user]
    messages: list[ModelMessage] = [
        *history,
        plan.first_request.make(timestamp=now, parts=parts, **ids),
        plan.response.make(
            timestamp=now,
            parts=[ToolCallPart(MANAGER_TOOL_NAME, call_args(prompt, validated), tool_call_id=call_id)],
            **ids,
        ),
    ]
    ctx = direct_context(context_base(model=model, agent=agent, tool_name=MANAGER_TOOL_NAME), deps, prompt)
    # The run's usage, as a tool sees it in a graph run (the result's own object).
    usage = plan.usage.make()
    ctx.__dict__.update(
        run_id=run_id,
        conversation_id=conversation_id,
        tool_call_id=call_id,
        messages=messages,
        usage=usage,
        run_step=1,
        max_retries=plan.max_retries,
    )
    token = enter(get_registry)  # the call meets the injector every surface meets (its gates)
    try:
        if (dispatcher := active_dispatcher()) is not None and is_durable(manager, manager.operation_of(validated)):
            value = await dispatcher.dispatch_execute(ctx, manager, validated)  # a durable run's unit
        else:
            value = await manager.execute(ctx, validated)
    except ModelRetry as retry:
        raise retry_error(name, retry.message) from None
    except ToolFailed as failed:
        raise failed_error(name, failed.message) from None
    finally:
        leave(token)
    returned = ToolReturnPart(MANAGER_TOOL_NAME, value, tool_call_id=call_id, timestamp=now)
    messages.append(plan.request.make(timestamp=now, parts=[returned], **ids))
    none_as_text = value is None and admits_none(manager.config.output_type)
    final = output_parts(value, plan.params, agentool=name, call_id=final_id, none_as_text=none_as_text)
    messages.append(plan.response.make(timestamp=now, parts=final, **ids))
    call = final[0]
    if isinstance(call, ToolCallPart) and plan.final_request is not None and plan.final_return is not None:
        # An output tool call: the framework answers it in a request of its own.
        done = plan.final_return.make(timestamp=now, tool_name=call.tool_name, tool_call_id=final_id)
        messages.append(plan.final_request.make(timestamp=now, parts=[done], **ids))
    try:
        output = plan.output(value, final)
    except ValidationError as error:  # the graph's output tool would refuse the value alike
        assert isinstance(call, ToolCallPart)
        raise output_retry_error(name, call.tool_name, error.errors(include_url=False, include_context=False)) from None
    return _result_adapter().validate_python(
        {
            'output': output,
            'messages': messages,
            'new_message_index': len(history),
            'usage': usage,
            'run_id': run_id,
            'conversation_id': conversation_id,
        }
    )


def _conversation_id(history: Sequence[ModelMessage]) -> str:
    for message in reversed(history):
        if message.conversation_id is not None:
            return message.conversation_id
    return _uuid7()


def _uuid7() -> str:
    """A version 7 UUID (time-ordered), as pydantic-ai gives runs and conversations."""
    value = (time.time_ns() // 1_000_000) << 80 | int.from_bytes(os.urandom(10)) & ((1 << 80) - 1)
    value = (value & ~(0xF << 76)) | (0x7 << 76)  # version 7
    value = (value & ~(0x3 << 62)) | (0x2 << 62)  # RFC 4122 variant
    text = f'{value:032x}'
    return f'{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}'
