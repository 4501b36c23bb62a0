"""`Recorder`: a capability that records real runs (any model) to a recording file.

It only observes, through pydantic-ai's public capability hooks: every model response (the tool
calls the model chose), every tool execution (what the tool returned) and the run's output. The
file is written when each run ends, so a test that records can be rerun to replay at once.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, cast

from pydantic_ai import AgentRunResult, RunContext
from pydantic_ai.capabilities import (
    AbstractCapability,
    WrapModelRequestHandler,
    WrapRunHandler,
    WrapToolExecuteHandler,
)
from pydantic_ai.messages import ModelResponse, ToolCallPart
from pydantic_ai.models import ModelRequestContext
from pydantic_ai.tools import ToolDefinition
from pydantic_core import to_jsonable_python

from ..errors import ConfigurationError
from .recording import RecordedCall, RecordedRun, RecordedToolCall, Recording

__all__ = ('Recorder',)


@dataclass
class _Pending:
    """A run being recorded: the calls of each model response and the results that came back."""

    steps: list[list[tuple[str, RecordedCall]]] = field(default_factory=list[list[tuple[str, RecordedCall]]])
    results: dict[str, RecordedToolCall] = field(default_factory=dict[str, RecordedToolCall])


@dataclass
class Recorder(AbstractCapability[Any]):
    """Records every run it is added to into the recording file at `path`.

    Pass it to a run (`agent.run(prompt, capabilities=[recorder])`) or to the agent. The file is
    replaced on the first run this recorder finishes and rewritten after each later one, so it
    holds exactly the runs of this recorder. Only calls whose tool returned are kept: a call the
    model had to redo is left out, so a replay plays the path that worked.

    Example:
        ```python {test="skip"}
        recorder = Recorder(Path(__file__).parent / 'recordings' / 'weather.json')
        await agent.run('Weather in Paris?', capabilities=[recorder])
        ```
    """

    path: str | os.PathLike[str]
    """Where the recording goes; a test usually keeps it next to itself."""
    recording: Recording = field(default_factory=Recording, init=False)
    """The runs recorded so far."""
    _pending: dict[str, _Pending] = field(default_factory=dict[str, _Pending], init=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(cast(object, self.path), str | os.PathLike) or not str(self.path):
            raise ConfigurationError(
                f'Recorder(path=...) must be a file path (a non-empty str or a Path); got {self.path!r}',
                option='path',
                value=repr(self.path),
            )

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

    async def wrap_tool_execute(
        self,
        ctx: RunContext[Any],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: dict[str, Any],
        handler: WrapToolExecuteHandler,
    ) -> Any:
        result = await handler(args)
        if tool_def.kind == 'function':
            self._run(ctx).results[call.tool_call_id] = RecordedToolCall(
                tool=call.tool_name, args=call.args_as_dict(), result=to_jsonable_python(result, fallback=repr)
            )
        return result

    async def wrap_run(self, ctx: RunContext[Any], *, handler: WrapRunHandler) -> AgentRunResult[Any]:
        try:
            return await handler()
        finally:
            self._pending.pop(ctx.run_id or '', None)  # a failed run is not recorded

    async def after_run(self, ctx: RunContext[Any], *, result: AgentRunResult[Any]) -> AgentRunResult[Any]:
        pending = self._pending.pop(ctx.run_id or '', _Pending())
        steps = [[call for call_id, call in step if call_id in pending.results] for step in pending.steps]
        self.recording.runs.append(
            RecordedRun(
                prompt=_text(ctx.prompt),
                steps=[step for step in steps if step],
                tool_calls=list(pending.results.values()),
                output=to_jsonable_python(result.output, fallback=repr),
            )
        )
        self.recording.save(self.path)
        return result

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None

    def _run(self, ctx: RunContext[Any]) -> _Pending:
        key = ctx.run_id or ''
        pending = self._pending.get(key)
        if pending is None:
            pending = self._pending[key] = _Pending()
        return pending


def _text(prompt: Any) -> str:
    if prompt is None:
        return ''
    if isinstance(prompt, str):
        return prompt
    return ''.join(item for item in prompt if isinstance(item, str))
