"""`Replay`: serve a cassette or recording back, so a test runs offline what a real model and real tools once did.

Two halves, usable together or apart:

- `replay.model` answers as the model did: for a cassette, a `CassetteModel` replaying every
  recorded response; for a tool-level recording (the older format, still read), an `AgentDouble`
  with one script per recorded run (chosen by the exact prompt) that makes the recorded tool
  calls and gives the recorded output, through the agent's own validators, so a recording that no
  longer fits the agent fails with a `DriftError`.
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
from pydantic_ai.models import Model
from pydantic_ai.tools import ToolDefinition

from ..errors import ConfigurationError, quote
from ._files import as_path, read_json
from ._tool_answers import ToolAnswers
from .cassette import FORMAT, Cassette
from .cassette_model import CassetteModel
from .double import AgentDouble
from .log import CallLog
from .recording import RecordedRun, Recording
from .script import Call, Output, Prompt, Script, Step

__all__ = ('Replay',)


@dataclass(init=False)
class Replay(AbstractCapability[Any]):
    """Serves the recording or cassette at `source` (a path, a loaded `Recording` or a `Cassette`).

    From a cassette, `model` is a `CassetteModel` replaying what the real model answered, and the
    tool results come from the cassette's `tool_calls` (recorded through `CassetteModel.tools`).
    From a tool-level recording (the older format, still read), `model` is an `AgentDouble`.

    Example:
        ```python {test="skip"}
        replay = Replay(Path(__file__).parent / 'recordings' / 'weather.json')
        with agent.override(model=replay.model):
            result = await agent.run('Weather in Paris?', capabilities=[replay])
        replay.calls.assert_called('geocode', {'city': 'Paris'})
        ```
    """

    recording: Recording | Cassette
    source: str
    """Where the recording came from, for messages."""
    model: Model
    """Replays the model's side: a `CassetteModel` for a cassette; for a recording, an `AgentDouble`
    making the recorded tool calls, then giving the recorded output."""
    calls: CallLog
    """The tool calls this replay answered."""
    _answers: ToolAnswers = field(repr=False)

    def __init__(self, source: Recording | Cassette | str | os.PathLike[str], *, name: str = 'replay') -> None:
        __tracebackhide__ = True  # cassette errors point at the test, not here
        if not isinstance(cast(object, source), Recording | Cassette | str | os.PathLike):
            raise ConfigurationError(
                f'Replay(source=...) must be a recording or cassette file path, a Recording or a Cassette; '
                f'got {quote(cast(object, source))}',
                option='source',
                value=quote(cast(object, source)),
            )
        self.recording = source if isinstance(source, Recording | Cassette) else _load(source)
        self.source = 'the recording' if isinstance(source, Recording | Cassette) else repr(str(source))
        self.calls = CallLog()
        if isinstance(self.recording, Cassette):
            if not self.recording.exchanges and not self.recording.tool_calls:
                raise ConfigurationError(f'{self.source} holds nothing to replay', option='source', value=self.source)
            model = self.model = CassetteModel(None, cassette=self.recording)
            # Arguments are looked up as the cassette wrote them (scrubbed of secrets).
            self._answers = model.tool_answers()
            return
        if not self.recording.runs:
            raise ConfigurationError(f'{self.source} holds no runs to replay', option='source', value=self.source)
        self.model = AgentDouble(*_scripts(self.recording.runs), name=name)
        self._answers = ToolAnswers((c for run in self.recording.runs for c in run.tool_calls), self.source)

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
        served = self._answers.serve(call, ctx.run_id, self.calls)
        if served is None:
            raise self._answers.unrecorded(call.tool_name, call.args_as_dict())
        return served.result

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None


def _load(source: str | os.PathLike[str]) -> Recording | Cassette:
    # One reader for both formats: the file's "format" key says which it is.
    __tracebackhide__ = True  # cassette errors point at the test, not here
    path = as_path(source, 'recording', ConfigurationError)
    data = read_json(
        path,
        'recording',
        ConfigurationError,
        missing=f'recording {str(path)!r} does not exist; record it first with Recorder({str(path)!r})',
    )
    if isinstance(data, dict) and cast('dict[str, Any]', data).get('format') == FORMAT:
        return Cassette.from_data(data, source=str(path))
    return Recording.from_data(data, source=str(path))


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
