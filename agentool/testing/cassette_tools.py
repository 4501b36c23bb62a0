"""`CassetteTools`: the capability that keeps tool results in a cassette and answers from them (as `Replay`,
`Recorder`, `FrozenTools` and `CassetteToolset` do)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, cast

from opentelemetry.metrics import NoOpMeterProvider
from pydantic import TypeAdapter
from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability, WrapToolExecuteHandler
from pydantic_ai.messages import ToolCallPart
from pydantic_ai.tools import ToolDefinition

from .._bounds import quote
from ..core.manager import MANAGER_TOOL_NAME
from ..core.model import AgenToolModel
from ..core.request import operation_name
from ..errors import ConfigurationError
from ..telemetry import Surface, operation_span
from ..toolset import METADATA_KEY
from ._tool_results import Home, ToolAnswers, answered, replayed_result, tool_home
from .cassette import RecordedToolCall
from .cassette_model import CassetteModel
from .log import CallLog

__all__ = ('CassetteTools',)


Run = Callable[[], Awaitable[Any]]
"""Makes the tool call for real."""


@dataclass
class AnsweringTools(AbstractCapability[Any]):
    """Answers function tool calls from recorded results, noting each in `calls`; else `_unanswered`."""

    calls: CallLog = field(default_factory=CallLog, init=False)
    _answers: ToolAnswers = field(init=False, repr=False)

    async def wrap_tool_execute(
        self,
        ctx: RunContext[Any],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: dict[str, Any],
        handler: WrapToolExecuteHandler,
    ) -> Any:
        __tracebackhide__ = True  # cassette errors point at the test, not here
        if tool_def.kind != 'function':
            return await handler(args)
        return await self.answer(ctx, call, tool_def, tool_home(ctx, tool_def.name), lambda: handler(args))

    async def answer(
        self, ctx: RunContext[Any], call: ToolCallPart, tool_def: ToolDefinition, where: Home, run: Run
    ) -> Any:
        """`call`'s recorded result (with its live call's span), else what `_unanswered` makes of it."""
        __tracebackhide__ = True  # cassette errors point at the test, not here
        if self._replays:
            served = self._answers.serve(call, ctx.run_id, self.calls, where)
            if served is not None:
                trace_replayed_call(ctx, tool_def, call.args_as_dict())
                return served.value
        return await self._unanswered(ctx, call, where, run)

    @property
    def _replays(self) -> bool:
        return True

    async def _unanswered(self, ctx: RunContext[Any], call: ToolCallPart, where: Home, run: Run) -> Any:
        raise NotImplementedError

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None


@dataclass
class CassetteTools(AnsweringTools):
    """Records tool results into `model`'s cassette, or answers tool calls from it.

    `calls` holds the function tool calls made: answered from the cassette or, while recording,
    run (each with its result as the cassette writes it, so an assertion holds on both runs).
    """

    model: CassetteModel

    def __post_init__(self) -> None:
        if not isinstance(cast(object, self.model), CassetteModel):
            raise ConfigurationError(
                f'CassetteTools needs the CassetteModel it records with; got {quote(self.model)}', option='model'
            )
        self._answers = self.model.tool_answers()

    @property
    def _replays(self) -> bool:
        # Re-recording (`all`, or `once` with no cassette yet) runs every tool afresh.
        return not (self.model.records and self.model.mode in ('all', 'once'))

    async def _unanswered(self, ctx: RunContext[Any], call: ToolCallPart, where: Home, run: Run) -> Any:
        __tracebackhide__ = True  # cassette errors point at the test, not here
        sent = call.args_as_dict()
        if not self.model.records:
            raise self._answers.unrecorded(call.tool_name, sent)
        result = await run()
        returns = self._answers.returns(where)
        kept = self._keep(ctx, call, result, returns)
        # Logged as a replay logs it (the result as written, then typed): one assertion holds for both.
        typed = replayed_result(kept.result, kept.types, kept.annotated, returns)[0]
        self.calls.add(answered(call.tool_name, sent, call.tool_call_id, ctx.run_id, typed))
        return result

    def _keep(
        self, ctx: RunContext[Any], call: ToolCallPart, result: Any, returns: TypeAdapter[Any] | None
    ) -> RecordedToolCall:
        """Keep a tool's result, scrubbed and redacted, and save (`Recorder` keeps it with its run)."""
        __tracebackhide__ = True  # cassette errors point at the test, not here
        kept = self.model.written_tool_call(call.tool_name, call.args_as_dict(), result, returns)
        self.model.cassette.tool_calls.append(kept)
        self.model.save()
        return kept


_NOT_MEASURED = NoOpMeterProvider()


def trace_replayed_call(ctx: RunContext[Any], tool_def: ToolDefinition, args: dict[str, Any]) -> None:
    """The operation span the live call opened, if it is an agentool's, so a span query finds the replayed
    call too (unmeasured)."""
    surface: Surface = 'toolset'
    if tool_def.name == MANAGER_TOOL_NAME:
        model = getattr(ctx.agent, 'model', None)
        if not isinstance(model, AgenToolModel) or (config := model.registry.get(model.name)) is None:
            return
        chosen = args.get(config.routing_config.operation_field)
        agentool, operation, surface = model.name, None if chosen is None else operation_name(chosen), 'agent'
    else:
        found = (tool_def.metadata or {}).get(METADATA_KEY)
        named = cast(dict[str, Any], found) if isinstance(found, dict) else {}
        agentool, operation = named.get('agentool'), named.get('operation')
    if isinstance(agentool, str) and isinstance(operation, str):
        with operation_span(agentool, operation, surface=surface, tracer=ctx.tracer, meter_provider=_NOT_MEASURED):
            pass
