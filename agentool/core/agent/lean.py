"""Lean runs: a capability answers an agentool's plain run itself — validate, route, call — with no graph.

`LeanRuns.wrap_run` answers without calling its handler a run of the agent's learned shape
(`LeanPlan`), with the `AgentRunResult` and messages the graph would produce.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from opentelemetry.trace import NoOpTracer, ProxyTracer, ProxyTracerProvider
from pydantic import TypeAdapter, ValidationError
from pydantic_ai import AgentRunResult, RunContext
from pydantic_ai.capabilities import AbstractCapability, WrapRunHandler
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
    repair_messages,
)
from pydantic_ai.toolsets import AbstractToolset
from pydantic_ai.usage import UsageLimits

from ...errors import InvalidInputError
from ..manager import MANAGER_TOOL_NAME
from ..model import DETERMINISTIC_RUN, AgenToolModel
from ..operation import UNSET, run_operation
from ..output import output_parts
from ..request import call_args, declares_deps, output_retry_error
from ._lean_plan import LEARN_FROM_NEXT_RUN, LeanPlan, learn_plan

__all__ = ('LeanRuns', 'history_allows_lean', 'overridden', 'plain_runs')

overridden: ContextVar[frozenset[int]] = ContextVar('agentool_overridden_agents', default=frozenset())
"""Ids of the agents whose `override()` is in effect here: their runs take the graph."""

plain_runs: ContextVar[frozenset[int]] = ContextVar('agentool_plain_runs', default=frozenset())
"""Ids of the agents whose plain `run` is in progress here (`iter()` and `run_stream()` take the graph)."""

_GLOBAL_TRACING = ProxyTracerProvider()

_DEFAULT_LIMITS = UsageLimits()


@functools.cache
def _result_adapter() -> TypeAdapter[AgentRunResult[Any]]:
    # Built on the first lean run: its schema spans every message type, too slow for import time.
    return TypeAdapter[AgentRunResult[Any]](AgentRunResult[Any])


@dataclass(frozen=True, eq=False)
class _Shape:
    """A run's leaf toolsets (by identity) and its leaf capabilities' classes (instances may be fresh)."""

    toolsets: tuple[AbstractToolset[Any], ...]
    capabilities: tuple[type[AbstractCapability[Any]], ...]

    def matches(self, other: _Shape) -> bool:
        return self.capabilities == other.capabilities and list(map(id, self.toolsets)) == list(map(id, other.toolsets))


@dataclass(kw_only=True, eq=False)
class LeanRuns(AbstractCapability[Any]):
    """Answers an `AgenToolAgent`'s plain runs (see `shape_of`) from its `wrap_run`, without the graph."""

    model: AgenToolModel
    deps_type: Any = None
    blocker: str | None = None
    """Why the agent's runs always take the graph, or `None` (see `AgenToolAgent.lean_blocker`)."""
    runs: int = 0
    _plan: LeanPlan | None = field(default=None, repr=False)
    _shape: _Shape | None = field(default=None, repr=False)

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None  # part of the agent, not a spec option

    def block(self, reason: str) -> None:
        """Make every later run take the graph, for `reason` (the first one is kept)."""
        if self.blocker is None:
            self.blocker = reason

    async def wrap_run(self, ctx: RunContext[Any], *, handler: WrapRunHandler) -> AgentRunResult[Any]:
        if ctx.prompt is None and not ctx.messages:
            # pydantic-ai would refuse it with its own `UserError`; the input is what is missing.
            name = self.model.model_name
            raise InvalidInputError(f'agentool {name!r}: no input provided (no prompt)', agentool=name)
        shape = self.shape_of(ctx)
        if shape is None:
            return await handler()
        plan, learned = self._plan, self._shape
        if plan is not None and learned is not None and learned.matches(shape) and history_allows_lean(ctx.messages):
            self.runs += 1
            return await answer(plan, self.model, ctx)
        fresh = not ctx.messages and not ctx.usage.has_values()
        result = await handler()
        if fresh and self._plan is None and ctx.agent is not None:
            # The first plain run shows the agent's shape; a shape we do not know keeps the graph for good.
            found = learn_plan(result, self.model.output_parameters, ctx.agent.output_type)
            if isinstance(found, LeanPlan):
                self._plan, self._shape = found, shape
            elif found != LEARN_FROM_NEXT_RUN:
                self.block('its first run took a shape a lean run does not reproduce')
        return result

    def shape_of(self, ctx: RunContext[Any]) -> _Shape | None:
        """The shape of a plain run, or `None` when the run is not plain: a run is plain with the agent's own
        model, a text prompt, deps (or none needed), no metadata, default limits, no tracing, no `override()`."""
        if (
            self.blocker is not None
            or type(ctx.prompt) is not str
            or ctx.model is not self.model
            # Deps not given for a deps type: the graph's manager tool builds them (see `manager_tool`).
            or (ctx.deps is None and declares_deps(self.deps_type))
            or ctx.metadata is not None
            or (ctx.usage_limits is not None and ctx.usage_limits != _DEFAULT_LIMITS)
            or not isinstance(ctx.tracer, NoOpTracer)  # the run is instrumented: the graph traces it
            or not isinstance(_GLOBAL_TRACING.get_tracer('agentool'), (ProxyTracer, NoOpTracer))
            or ctx.agent is None
            or id(ctx.agent) in overridden.get()
            or id(ctx.agent) not in plain_runs.get()
            or ctx.tool_manager is None
            or ctx.root_capability is None
        ):
            return None
        toolsets: list[AbstractToolset[Any]] = []
        ctx.tool_manager.toolset.apply(toolsets.append)
        capabilities: list[type[AbstractCapability[Any]]] = []
        ctx.root_capability.apply(lambda capability: capabilities.append(type(capability)))
        return _Shape(tuple(toolsets), tuple(capabilities))


def history_allows_lean(history: Sequence[ModelMessage]) -> bool:
    """Whether `history` ends with a finished run, so a run continuing it takes the two steps a lean run reproduces."""
    if not history:
        return True
    last = history[-1]
    if isinstance(last, ModelResponse):
        return not any(isinstance(part, ToolCallPart) for part in last.parts)
    return bool(last.parts) and all(
        isinstance(part, ToolReturnPart) and part.tool_name != MANAGER_TOOL_NAME and part.outcome == 'success'
        for part in last.parts
    )


async def answer(plan: LeanPlan, model: AgenToolModel, ctx: RunContext[Any]) -> AgentRunResult[Any]:
    """The result the run of `ctx` would get through the graph, computed directly."""
    name = model.model_name
    prompt = ctx.prompt
    assert isinstance(prompt, str)
    manager = model.registry.get_manager(name)
    validated = manager.validate_json(prompt)  # the typed error the model raises in a run
    # The graph's own history cleanup (merging adjacent requests, among others), through its public form.
    history = repair_messages(list(ctx.messages), repair_last_response=False) if ctx.messages else []
    responses = sum(isinstance(message, ModelResponse) for message in history)
    call_id, final_id = f'agentool_{name}_{responses}', f'agentool_{name}_{responses + 1}'
    now = datetime.now(UTC)
    ids = {'run_id': ctx.run_id, 'conversation_id': ctx.conversation_id}
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
    ctx.usage.incr(plan.usage.make())  # the run's usage, as the tool sees it in a graph run
    tool_ctx = dataclasses.replace(
        ctx,
        tool_name=MANAGER_TOOL_NAME,
        tool_call_id=call_id,
        messages=messages,
        run_step=1,
        max_retries=1,  # pydantic-ai's default: a lean agent sets no other
    )
    given = UNSET if tool_ctx.deps is None else tool_ctx.deps
    value = await run_operation(DETERMINISTIC_RUN, manager, validated, tool_ctx, deps=given, tracer=ctx.tracer)
    returned = ToolReturnPart(MANAGER_TOOL_NAME, value, tool_call_id=call_id, timestamp=now)
    messages.append(plan.request.make(timestamp=now, parts=[returned], **ids))
    final = output_parts(value, plan.params, agentool=name, call_id=final_id, output_type=manager.config.output_type)
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
    ctx.messages[:] = messages  # the run's own history holds the run, as after a graph run
    return _result_adapter().validate_python(
        {
            'output': output,
            'messages': messages,
            'new_message_index': len(history),
            'usage': ctx.usage,
            'run_id': ctx.run_id,
            'conversation_id': ctx.conversation_id,
        }
    )
