"""The cassette: what real runs did, one JSON file per test, replayable offline.

A cassette records at either of two levels, or both:

- *Exchanges* (written by `CassetteModel`): one entry per model request, the request as the model
  saw it, normalised for review (messages without timestamps, ids or run ids; tool definitions;
  output mode and schema; the settings that change an answer), its fingerprint, the
  `ModelResponse` and, for a streamed request, the stream's events in order.
- *Runs* (written by `Recorder`, with any model): per run, its prompt, the tool calls the model
  made (one list per model response, only the calls that returned) and its final output. A replay
  plays them through an `AgentDouble`, so a cassette that no longer fits the agent fails with a
  `DriftError`.

Either way the tool results can join it (`tool_calls`, looked up by tool name and canonical
arguments), so a replay runs without the tools. The file is diff-friendly: sorted keys, one value
a line (indented by one space), `"version": 2`. It grows with what each request adds: an exchange continuing an earlier
one keeps only its new messages and names the rest (`history`, see `agentool.testing._history`);
in memory every request is whole. Files of version 1 (each request whole) and of the older
tool-level format (`"agentool-recording"`) load too, the latter as a cassette of runs.

Binary prompt content (images, documents, audio) is stored inline, base64-encoded as pydantic-ai
serialises it: a cassette is self-contained, and its fingerprint covers the bytes.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, cast

from pydantic import BaseModel, Field, TypeAdapter, ValidationError, model_validator
from pydantic_ai import ModelMessagesTypeAdapter
from pydantic_ai.messages import ModelResponse, ModelResponseStreamEvent
from pydantic_core import to_jsonable_python

from ..errors import CassetteError, clip
from . import _history
from ._files import as_path, check_document, read_document, write_json
from ._kept_types import lost_types, restored

__all__ = (
    'FORMAT',
    'VERSION',
    'Cassette',
    'CassetteInfo',
    'Exchange',
    'RecordMode',
    'RecordedCall',
    'RecordedRun',
    'RecordedToolCall',
    'Recording',
    'canonical',
    'canonical_args',
)

FORMAT = 'agentool-cassette'
VERSION = 2
"""The version written: 2 keeps each request as what is new since the exchange it continues."""
_FORMATS = {FORMAT: (1, VERSION), 'agentool-recording': (1,)}
"""What `Cassette.load` reads: the cassette (version 1 kept each request whole), and the older
tool-level recording (its runs only)."""

RecordMode = Literal['once', 'none', 'new_episodes', 'all']
"""How a `CassetteModel` uses its cassette.

- `none`: replay only; a missing cassette or an unmatched request fails (the CI default).
- `once`: record when the cassette file is missing, else replay only.
- `new_episodes`: replay what matches, record (and append) the rest.
- `all`: re-record everything, replacing the cassette.
"""

_events = TypeAdapter(list[ModelResponseStreamEvent])


class RecordedCall(BaseModel):
    """A tool call the model made: the tool name and the arguments it sent."""

    tool: str
    args: dict[str, Any]


class RecordedToolCall(RecordedCall):
    """A tool call and what the tool returned (as JSON-compatible data)."""

    result: Any = None
    types: dict[str, str] = {}
    """Values of `result` that JSON holds as text or a list but the tool returned as another type,
    by JSON pointer into this call (`/result/when`) to the type's name (those of an exchange's
    `types`, and `bytes`, `base64`, `tuple`, `set`, `frozenset`): replay restores them."""
    annotated: bool = False
    """Whether the tool's return annotation rebuilds the result (a pydantic model, a dataclass, an
    enum) exactly, as checked when it was recorded: replay validates it through the annotation."""


class RecordedRun(BaseModel):
    """One run recorded at the tool level (by `Recorder`)."""

    prompt: str
    steps: list[list[RecordedCall]]
    """The model's tool calls, one list per model response."""
    tool_calls: list[RecordedToolCall] = Field(default_factory=list[RecordedToolCall], exclude=True)
    """This run's tool results: the entries of the cassette's `tool_calls` (the one list a replay
    answers from) that answered this run's calls, filled when the cassette loads or is recorded.
    Not dumped (the cassette's list holds them); results given here that the list lacks join it
    when the cassette is saved."""
    output: Any = None
    """The run's final output, as JSON-compatible data."""


class CassetteInfo(BaseModel):
    """The recorded model, so a replay without it still behaves like it."""

    model_name: str = ''
    system: str = ''
    profile: dict[str, Any] = {}
    """The model profile's plain values (flags, modes, templates): they decide how pydantic-ai
    prepares requests (output mode, native output support), so replay prepares them alike."""


class Exchange(BaseModel):
    """One model request and what the model answered."""

    fingerprint: str
    """A hash of `request` before redaction: what the next replay matches on."""
    request: dict[str, Any]
    """What the model was sent, normalised (see `agentool.testing.cassette`)."""
    response: dict[str, Any]
    """The `ModelResponse`, as pydantic-ai's `ModelMessagesTypeAdapter` writes it."""
    stream: list[dict[str, Any]] | None = None
    """The stream events of a streamed request, in order; `None` for a plain request."""
    types: dict[str, str] = {}
    """Values of `response` and `stream` that JSON holds as text but the live run had as another
    type, by JSON pointer into this exchange (`/response/provider_details/timestamp`) to the type's
    name (`datetime`, `date`, `time`, `timedelta`, `Decimal`, `UUID`): replay restores them."""

    def model_response(self) -> ModelResponse:
        """The recorded `ModelResponse`, its values of the types the live run had."""
        data = restored(self.response, self.types, '/response')
        message = ModelMessagesTypeAdapter.validate_python([data])[0]
        if not isinstance(message, ModelResponse):
            raise ValueError('the recorded response is a request, not a ModelResponse')
        return message

    def stream_events(self) -> list[ModelResponseStreamEvent]:
        """The recorded stream events (empty for a plain request), their values of the live run's types."""
        return _events.validate_python(restored(self.stream or [], self.types, '/stream'))

    @staticmethod
    def dump_response(response: ModelResponse) -> dict[str, Any]:
        return ModelMessagesTypeAdapter.dump_python([response], mode='json')[0]

    @staticmethod
    def dump_events(events: list[ModelResponseStreamEvent]) -> list[dict[str, Any]]:
        return _events.dump_python(events, mode='json')

    @staticmethod
    def dump_types(response: ModelResponse, events: list[ModelResponseStreamEvent] | None) -> dict[str, str]:
        """The `types` of an exchange answering `response` (and `events`): what its JSON loses."""
        live = ModelMessagesTypeAdapter.dump_python([response])
        again = ModelMessagesTypeAdapter.dump_python(
            ModelMessagesTypeAdapter.validate_python(ModelMessagesTypeAdapter.dump_python([response], mode='json'))
        )
        found = lost_types(live[0], again[0], '/response')
        if events:
            live_events = _events.dump_python(events)
            again_events = _events.dump_python(_events.validate_python(_events.dump_python(events, mode='json')))
            found.update(lost_types(live_events, again_events, '/stream'))
        return found


class Cassette(BaseModel):
    """A cassette file's content: the recorded model, its exchanges or runs, and tool results."""

    format: Literal['agentool-cassette'] = FORMAT
    version: Literal[2] = VERSION
    model: CassetteInfo = Field(default_factory=CassetteInfo)
    exchanges: list[Exchange] = []
    runs: list[RecordedRun] = []
    """Runs recorded at the tool level (by `Recorder`); written only when there is one."""
    tool_calls: list[RecordedToolCall] = []
    """Tool results, answered by tool name and canonical arguments when a replay runs without tools."""
    toolsets: dict[str, list[dict[str, Any]]] = {}
    """The tool definitions of each recorded toolset (an MCP server), by name, so a replay needs no
    server (see `CassetteToolset`); written only when there is one."""

    @model_validator(mode='before')
    @classmethod
    def _whole_requests(cls, data: Any) -> Any:
        # The file keeps each request as what is new since the exchange it continues.
        if not isinstance(data, dict):
            return data
        fields = cast('dict[str, Any]', data)
        if 'exchanges' not in fields:
            return fields
        return {**fields, 'exchanges': _history.read(fields['exchanges'])}

    @model_validator(mode='after')
    def _gather_tool_calls(self) -> Cassette:
        # One list of tool results to answer from (the older format kept them per run), and each
        # run's own results read back from it.
        known = {_call_key(call) for call in self.tool_calls}
        for run in self.runs:
            for call in run.tool_calls:
                if (key := _call_key(call)) not in known:
                    known.add(key)
                    self.tool_calls.append(call)
        _fill_runs(self.runs, self.tool_calls)
        return self

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Cassette:
        """Read a cassette file, or a recording of the older tool-level format (at most 64 MB,
        checked before parsing).

        Raises:
            CassetteError: the file is missing, too large, unreadable, not JSON, not a cassette or
                of another version; or the path is not one (empty, a NUL byte).
        """
        __tracebackhide__ = True  # cassette errors point at the test, not here
        file = cassette_path(path)
        missing = (
            f'cassette {str(file)!r} does not exist; record it first '
            '(CassetteModel in mode "once" or "all", or Recorder)'
        )
        data = read_document(file, 'cassette', CassetteError, formats=_FORMATS, missing=missing)
        return cls._validated(data, str(file))

    @classmethod
    def from_data(cls, data: Any, *, source: str = 'the cassette') -> Cassette:
        """Validate parsed JSON as a cassette (or an older recording), naming a wrong format or version plainly."""
        __tracebackhide__ = True  # cassette errors point at the test, not here
        return cls._validated(check_document(data, source, 'cassette', CassetteError, formats=_FORMATS), source)

    @classmethod
    def _validated(cls, data: Mapping[str, Any], source: str) -> Cassette:
        __tracebackhide__ = True  # cassette errors point at the test, not here
        try:
            return cls.model_validate({**data, 'format': FORMAT, 'version': VERSION})
        except ValidationError as error:
            raise CassetteError(
                f'{source!r} is not an agentool cassette: {clip(str(error))}', path=source, reason='invalid'
            ) from None

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the cassette to `path` whole (parent folders created).

        Raises:
            CassetteError: it cannot be written there, or its data holds text UTF-8 cannot encode.
        """
        __tracebackhide__ = True  # cassette errors point at the test, not here
        data = self.model_dump(mode='json')
        # Parts a cassette does not use stay out, so it reads as before they existed.
        for key in ('runs', 'toolsets'):
            if not data[key]:
                del data[key]
        for exchange in data['exchanges']:
            if not exchange['types']:
                del exchange['types']
        for call in data['tool_calls']:
            _drop_defaults(call)
        known = {_call_key(call) for call in self.tool_calls}
        for run in self.runs:
            # A run's results live in the cassette's one list; one given after loading joins it.
            for call in run.tool_calls:
                if (key := _call_key(call)) not in known:
                    known.add(key)
                    data['tool_calls'].append(_drop_defaults(call.model_dump(mode='json')))
        data['exchanges'] = _history.written(data['exchanges'])
        write_json(cassette_path(path), data, 'cassette', CassetteError)


Recording = Cassette
"""The former name of a cassette of runs (the tool-level recording `Recorder` writes)."""


def cassette_path(path: object) -> Path:
    """`path` checked as a cassette path (see `Cassette.load`)."""
    __tracebackhide__ = True  # cassette errors point at the test, not here
    return as_path(path, 'cassette', CassetteError)


def _drop_defaults(call: dict[str, Any]) -> dict[str, Any]:
    """A tool call as written: its type notes only when there are some, so it reads as before them."""
    if not call.get('types'):
        call.pop('types', None)
    if not call.get('annotated'):
        call.pop('annotated', None)
    return call


def _call_key(call: RecordedToolCall) -> str:
    """A recorded call's identity (tool, arguments and result), as JSON a cassette already holds."""
    return json.dumps([call.tool, call.args, call.result], sort_keys=True, default=repr)


def _fill_runs(runs: list[RecordedRun], tool_calls: list[RecordedToolCall]) -> None:
    """Give each run without results the entries of `tool_calls` answering its calls, in order
    (runs are recorded one after another; a call repeated past its results takes the last)."""
    by_call: dict[str, list[RecordedToolCall]] = {}
    for call in tool_calls:
        by_call.setdefault(_args_key(call), []).append(call)
    taken: dict[str, int] = {}
    for run in runs:
        if run.tool_calls:
            continue
        for call in (call for step in run.steps for call in step):
            key = _args_key(call)
            answers = by_call.get(key)
            if answers:
                run.tool_calls.append(answers[min(taken.get(key, 0), len(answers) - 1)])
                taken[key] = taken.get(key, 0) + 1


def _args_key(call: RecordedCall) -> str:
    return json.dumps([call.tool, call.args], sort_keys=True, default=repr)


def canonical_args(args: Mapping[str, Any]) -> str:
    """Arguments as canonical JSON: sorted keys, no spaces, integral floats written as integers.

    Two calls with the same arguments get the same text, whatever the key order or whether a
    number came back as `2` or `2.0`.
    """
    return json.dumps(_normalise(to_jsonable_python(args)), sort_keys=True, separators=(',', ':'), ensure_ascii=False)


def canonical(value: Any) -> Any:
    """`value` as the JSON-compatible data a cassette keeps, integral floats as integers: the one
    form in which a typed output and its recorded JSON compare equal.

    Raises:
        ValueError: `value` is nested past pydantic-core's serialisation depth.
    """
    return _normalise(to_jsonable_python(value, fallback=repr))


def _normalise(value: object) -> object:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {key: _normalise(item) for key, item in cast('dict[str, object]', value).items()}
    if isinstance(value, list):
        return [_normalise(item) for item in cast('list[object]', value)]
    return value
