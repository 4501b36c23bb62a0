"""`Recorder`: record real runs (any model) at the tool level into a cassette, written as each run ends."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, cast

from pydantic import TypeAdapter
from pydantic_ai import AgentRunResult, RunContext
from pydantic_ai.capabilities import WrapModelRequestHandler, WrapRunHandler
from pydantic_ai.messages import ModelResponse, ToolCallPart
from pydantic_ai.models import ModelRequestContext
from pydantic_core import to_jsonable_python

from .._options import refuse
from .cassette import Cassette, RecordedCall, RecordedRun, RecordedToolCall
from .cassette_model import CassetteModel
from .cassette_tools import CassetteTools
from .double import prompt_text

__all__ = ('Recorder',)


@dataclass
class _Pending:
    """A run being recorded: the calls of each model response and the results that came back."""

    steps: list[list[tuple[str, RecordedCall]]] = field(default_factory=list[list[tuple[str, RecordedCall]]])
    results: dict[str, RecordedToolCall] = field(default_factory=dict[str, RecordedToolCall])


@dataclass(init=False)
class Recorder(CassetteTools):
    """Records every run it is added to into the cassette file at `path` (`scrub`: secrets replaced).

    The file is rewritten after each run with this recorder's runs: only calls whose tool returned,
    and no run that failed. `model` keeps the cassette in memory; it is not a model to run with.
    """

    path: str | os.PathLike[str]
    _pending: dict[str, _Pending] = field(repr=False)

    def __init__(self, path: str | os.PathLike[str], *, scrub: bool = True) -> None:
        if not isinstance(cast(object, path), str | os.PathLike) or not str(path):
            raise refuse('path', 'a file path (a non-empty str or a Path)', path, what='Recorder(path=...)')
        self.path = path
        self._pending = {}
        # Kept in memory, written whole when a run ends (a failed one leaves no trace); 'all' runs every tool.
        super().__init__(CassetteModel(None, cassette=Cassette(), mode='all', scrub=scrub))

    @property
    def recording(self) -> Cassette:
        """The runs recorded so far, with their tool results."""
        return self.model.cassette

    async def wrap_model_request(
        self, ctx: RunContext[Any], *, request_context: ModelRequestContext, handler: WrapModelRequestHandler
    ) -> ModelResponse:
        response = await handler(request_context)
        output_tools = {tool.name for tool in request_context.model_request_parameters.output_tools}
        calls = [
            (part.tool_call_id, RecordedCall(tool=part.tool_name, args=part.args_as_dict()))
            for part in response.parts
            if isinstance(part, ToolCallPart) and part.tool_name not in output_tools
        ]
        if calls:
            self._run(ctx).steps.append(calls)
        return response

    def _keep(
        self, ctx: RunContext[Any], call: ToolCallPart, result: Any, returns: TypeAdapter[Any] | None
    ) -> RecordedToolCall:
        # Kept with its run, which joins the cassette only if it ends well.
        written = self.model.written_tool_call(call.tool_name, call.args_as_dict(), result, returns)
        self._run(ctx).results[call.tool_call_id] = written
        return written

    async def wrap_run(self, ctx: RunContext[Any], *, handler: WrapRunHandler) -> AgentRunResult[Any]:
        try:
            return await handler()
        finally:
            self._pending.pop(ctx.run_id or '', None)  # a failed run is not recorded

    async def after_run(self, ctx: RunContext[Any], *, result: AgentRunResult[Any]) -> AgentRunResult[Any]:
        pending = self._pending.pop(ctx.run_id or '', _Pending())
        steps = [[call for call_id, call in step if call_id in pending.results] for step in pending.steps]
        run = {
            'prompt': prompt_text(ctx.prompt),
            'steps': [[call.model_dump(mode='json') for call in step] for step in steps if step],
            'output': to_jsonable_python(result.output, fallback=repr),
        }
        # Scrubbed like the tool results, so the replayed calls find them.
        recorded = RecordedRun.model_validate(self.model.clean(run))
        recorded.tool_calls = list(pending.results.values())
        cassette = self.model.cassette
        cassette.runs.append(recorded)
        cassette.tool_calls.extend(recorded.tool_calls)
        cassette.save(self.path)
        return result

    def _run(self, ctx: RunContext[Any]) -> _Pending:
        return self._pending.setdefault(ctx.run_id or '', _Pending())
