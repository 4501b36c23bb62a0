"""`Replay`: serve a recording back, so a test runs offline what a real model and real tools once did.

Two halves, usable together or apart:

- `replay.model` is an `AgentDouble` with one script per recorded run (chosen by the exact
  prompt): it makes the recorded tool calls and gives the recorded output. Like any double it
  goes through the agent's own validators, so a recording that no longer fits the agent fails with
  a `DriftError`.
- `replay` itself is a capability that answers tool calls from the recording instead of running
  the tools, looked up by tool name and canonical arguments; a call that was not recorded fails
  with an `UnrecordedCallError` naming the tool, the arguments and what was recorded.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, cast

from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability, WrapToolExecuteHandler
from pydantic_ai.messages import ToolCallPart
from pydantic_ai.tools import ToolDefinition

from ..errors import ConfigurationError, UnrecordedCallError
from .double import AgentDouble
from .log import CallLog, CallRecord
from .recording import RecordedRun, RecordedToolCall, Recording, canonical_args
from .script import Call, Output, Prompt, Script, Step

__all__ = ('Replay',)


@dataclass(init=False)
class Replay(AbstractCapability[Any]):
    """Serves the recording at `source` (a path or a loaded `Recording`).

    Example:
        ```python {test="skip"}
        replay = Replay(Path(__file__).parent / 'recordings' / 'weather.json')
        with agent.override(model=replay.model):
            result = await agent.run('Weather in Paris?', capabilities=[replay])
        replay.calls.assert_called('geocode', {'city': 'Paris'})
        ```
    """

    recording: Recording
    source: str
    """Where the recording came from, for messages."""
    model: AgentDouble
    """Replays the model's side: the recorded tool calls, then the recorded output."""
    calls: CallLog
    """The tool calls this replay answered."""
    _results: dict[tuple[str, str], list[RecordedToolCall]] = field(repr=False)
    _served: Counter[tuple[str, str]] = field(repr=False)

    def __init__(self, source: Recording | str | os.PathLike[str], *, name: str = 'replay') -> None:
        if not isinstance(cast(object, source), Recording | str | os.PathLike):
            raise ConfigurationError(
                f'Replay(source=...) must be a recording file path or a Recording; got {source!r}',
                option='source',
                value=repr(source),
            )
        self.recording = source if isinstance(source, Recording) else Recording.load(source)
        self.source = 'the recording' if isinstance(source, Recording) else repr(str(source))
        if not self.recording.runs:
            raise ConfigurationError(f'{self.source} holds no runs to replay', option='source', value=self.source)
        self.model = AgentDouble(*_scripts(self.recording.runs), name=name)
        self.calls = CallLog()
        self._results = {}
        for run in self.recording.runs:
            for recorded in run.tool_calls:
                self._results.setdefault((recorded.tool, canonical_args(recorded.args)), []).append(recorded)
        self._served = Counter()

    async def wrap_tool_execute(
        self,
        ctx: RunContext[Any],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: dict[str, Any],
        handler: WrapToolExecuteHandler,
    ) -> Any:
        if tool_def.kind != 'function':
            return await handler(args)
        sent = call.args_as_dict()
        key = (call.tool_name, canonical_args(sent))
        recorded = self._results.get(key)
        if not recorded:
            raise self._unrecorded(call.tool_name, key[1])
        # Repeated calls get the recorded results in order; past the last, the last one again.
        served = recorded[min(self._served[key], len(recorded) - 1)]
        self._served[key] += 1
        self.calls.add(
            CallRecord(
                tool=call.tool_name,
                args=sent,
                call_id=call.tool_call_id,
                run_id=ctx.run_id,
                returned=True,
                result=served.result,
                outcome='success',
            )
        )
        return served.result

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None

    def _unrecorded(self, tool: str, args: str) -> UnrecordedCallError:
        same_tool = [a for (t, a) in self._results if t == tool]
        recorded = '; '.join(same_tool) if same_tool else f'none (recorded tools: {", ".join(self._tools()) or "none"})'
        return UnrecordedCallError(
            f'replay: tool {tool!r} was called with {args}, which {self.source} does not hold; '
            f'recorded calls of {tool!r}: {recorded}',
            tool=tool,
            args=args,
            recorded=same_tool,
        )

    def _tools(self) -> list[str]:
        return sorted({tool for tool, _ in self._results})


def _scripts(runs: list[RecordedRun]) -> list[Script]:
    prompts = Counter(run.prompt for run in runs)
    scripts: list[Script] = []
    for index, run in enumerate(runs):
        steps: list[Step] = [tuple(Call(c.tool, c.args) for c in step) for step in run.steps]
        steps.append(Output(run.output))
        # A prompt recorded more than once is answered by its recordings in turn.
        times = 1 if prompts[run.prompt] > 1 else None
        scripts.append(Script(*steps, when=Prompt(run.prompt), name=f'recorded run {index + 1}', times=times))
    return scripts
