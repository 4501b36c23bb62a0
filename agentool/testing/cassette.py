"""The cassette: what real runs did, one JSON file per test, replayable offline.

Model *exchanges* (`CassetteModel`), tool-level *runs* (`Recorder`) and the tools' results; version 1
and the older `"agentool-recording"` format load too.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any, Literal, cast

from pydantic import BaseModel, Field, TypeAdapter, ValidationError, model_validator
from pydantic_ai import ModelMessagesTypeAdapter
from pydantic_ai.messages import ModelResponse, ModelResponseStreamEvent
from pydantic_core import to_jsonable_python

from ..errors import CassetteError, clip, quote
from . import _history
from ._files import as_path, read_json, write_json
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
# What `Cassette.load` reads: version 1 kept each request whole; a recording holds runs only.
_FORMATS = {FORMAT: (1, VERSION), 'agentool-recording': (1,)}

RecordMode = Literal['once', 'none', 'new_episodes', 'all']
"""How a `CassetteModel` uses its cassette: see "The modes" in the record-and-replay guide."""

_events = TypeAdapter(list[ModelResponseStreamEvent])


class RecordedCall(BaseModel):
    """A tool call the model made: the tool name and the arguments it sent."""

    tool: str
    args: dict[str, Any]


class RecordedToolCall(RecordedCall):
    """A tool call and what the tool returned (as JSON-compatible data)."""

    result: Any = None
    types: dict[str, str] = {}
    """The type names (`datetime`, `bytes`, `tuple`...) JSON lost, by pointer (`/result/when`)."""
    annotated: bool = False
    """Whether the tool's return annotation rebuilt the result exactly when recorded: replay uses it."""


class RecordedRun(BaseModel):
    """One run recorded at the tool level (by `Recorder`)."""

    prompt: str
    steps: list[list[RecordedCall]]
    """The model's tool calls, one list per model response."""
    tool_calls: list[RecordedToolCall] = Field(default_factory=list[RecordedToolCall], exclude=True)
    """This run's tool results, from the cassette's `tool_calls` (those it lacks join it on save)."""
    output: Any = None


class CassetteInfo(BaseModel):
    """The recorded model, so a replay without it still behaves like it."""

    model_name: str = ''
    system: str = ''
    profile: dict[str, Any] = {}


class Exchange(BaseModel):
    """One model request and what the model answered (fields: see "The file" in the record-and-replay guide)."""

    fingerprint: str
    request: dict[str, Any]
    response: dict[str, Any]
    stream: list[dict[str, Any]] | None = None
    types: dict[str, str] = {}

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
        live, again = _round_trip(ModelMessagesTypeAdapter, [response])
        found = lost_types(live[0], again[0], '/response')
        if events:
            found.update(lost_types(*_round_trip(_events, events), '/stream'))
        return found


def _round_trip(adapter: TypeAdapter[Any], value: Any) -> tuple[Any, Any]:
    """`value` as Python data, and as it reads back from its JSON: what JSON loses differs between them."""
    again = adapter.validate_python(adapter.dump_python(value, mode='json'))
    return adapter.dump_python(value), adapter.dump_python(again)


class Cassette(BaseModel):
    """A cassette file's content: the recorded model, its exchanges or runs, and tool results."""

    format: Literal['agentool-cassette'] = FORMAT
    version: Literal[2] = VERSION
    model: CassetteInfo = Field(default_factory=CassetteInfo)
    exchanges: list[Exchange] = []
    runs: list[RecordedRun] = []
    """Runs recorded at the tool level (by `Recorder`); written only when there is one."""
    tool_calls: list[RecordedToolCall] = []
    toolsets: dict[str, list[dict[str, Any]]] = {}
    """Each recorded toolset's tool definitions, by name, so a replay needs no server (`CassetteToolset`)."""

    @model_validator(mode='before')
    @classmethod
    def _whole_requests(cls, data: Any) -> Any:
        if not isinstance(data, dict) or 'exchanges' not in data:
            return cast(object, data)
        fields = cast('dict[str, Any]', data)
        return {**fields, 'exchanges': _history.read(fields['exchanges'])}

    @model_validator(mode='after')
    def _gather_tool_calls(self) -> Cassette:
        # One list of tool results to answer from (the older format kept them per run), read back per run.
        self.tool_calls = self._joined_tool_calls()
        _fill_runs(self.runs, self.tool_calls)
        return self

    def _joined_tool_calls(self) -> list[RecordedToolCall]:
        """The cassette's tool results, then those given to its runs that it lacks."""
        calls = list(self.tool_calls)
        known = {_key(call.tool, call.args, call.result) for call in calls}
        for call in (call for run in self.runs for call in run.tool_calls):
            if (key := _key(call.tool, call.args, call.result)) not in known:
                known.add(key)
                calls.append(call)
        return calls

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Cassette:
        """Read a cassette file, or an older recording (at most 64 MB); a `CassetteError` when it cannot."""
        __tracebackhide__ = True  # cassette errors point at the test, not here
        file = as_path(path)
        missing = (
            f'cassette {str(file)!r} does not exist; record it first '
            '(CassetteModel in mode "once" or "all", or Recorder)'
        )
        return cls.from_data(read_json(file, 'cassette', missing=missing), source=str(file))

    @classmethod
    def from_data(cls, data: Any, *, source: str = 'the cassette') -> Cassette:
        """Validate parsed JSON as a cassette (or an older recording), naming a wrong format or version plainly."""
        __tracebackhide__ = True  # cassette errors point at the test, not here
        if not isinstance(data, dict):
            shown = type(cast(object, data)).__name__
            raise CassetteError(
                f'{source!r} is not an agentool cassette: a JSON {shown}, not an object', path=source, reason='invalid'
            )
        fields = cast('dict[str, Any]', data)
        kind, version = fields.get('format'), fields.get('version')
        if not isinstance(kind, str) or kind not in _FORMATS:
            raise CassetteError(
                f'{source!r} is not an agentool cassette (format {quote(kind)})',
                path=source,
                reason='invalid',
                format=quote(kind),
            )
        if version not in _FORMATS[kind] or isinstance(version, bool):
            raise CassetteError(
                f'{source!r} is {kind} version {quote(version)}; this agentool reads version '
                + ' or '.join(str(number) for number in _FORMATS[kind]),
                path=source,
                reason='version',
                version=quote(version),
            )
        try:
            return cls.model_validate({**fields, 'format': FORMAT, 'version': VERSION})
        except ValidationError as error:
            raise CassetteError(
                f'{source!r} is not an agentool cassette: {clip(str(error))}', path=source, reason='invalid'
            ) from None

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the cassette to `path` whole (parent folders created); a `CassetteError` if it cannot."""
        __tracebackhide__ = True  # cassette errors point at the test, not here
        # Parts a cassette does not use stay out, so it reads as before they existed.
        data = _without_empty(self.model_dump(mode='json', exclude={'tool_calls'}), 'runs', 'toolsets')
        exchanges = [_without_empty(exchange, 'types') for exchange in data['exchanges']]
        data['exchanges'] = _history.written(exchanges)
        # A run's results live in the cassette's one list; one given after loading joins it.
        data['tool_calls'] = [
            _without_empty(call.model_dump(mode='json'), 'types', 'annotated') for call in self._joined_tool_calls()
        ]
        write_json(as_path(path), data, 'cassette')


Recording = Cassette
"""The former name of a cassette of runs (the tool-level recording `Recorder` writes)."""


def _without_empty(data: dict[str, Any], *keys: str) -> dict[str, Any]:
    for key in keys:
        if not data.get(key):
            data.pop(key, None)
    return data


def _key(*parts: Any) -> str:
    """An identity for recorded JSON (a call's tool, arguments and maybe result)."""
    return json.dumps(parts, sort_keys=True, default=repr)


def _fill_runs(runs: list[RecordedRun], tool_calls: list[RecordedToolCall]) -> None:
    """Give each run without results the `tool_calls` answering its calls, in order (past the last, the last)."""
    by_call: dict[str, list[RecordedToolCall]] = {}
    for call in tool_calls:
        by_call.setdefault(_key(call.tool, call.args), []).append(call)
    taken: dict[str, int] = {}
    for run in runs:
        if run.tool_calls:
            continue
        for call in (call for step in run.steps for call in step):
            key = _key(call.tool, call.args)
            answers = by_call.get(key)
            if answers:
                run.tool_calls.append(answers[min(taken.get(key, 0), len(answers) - 1)])
                taken[key] = taken.get(key, 0) + 1


def canonical_args(args: Mapping[str, Any]) -> str:
    """Arguments as canonical JSON: the same text whatever the key order or whether `2` came back as `2.0`."""
    return json.dumps(_normalise(to_jsonable_python(args)), sort_keys=True, separators=(',', ':'), ensure_ascii=False)


def canonical(value: Any) -> Any:
    """`value` as the JSON a cassette keeps, so a typed output equals its recording (`ValueError` if too deep)."""
    return _normalise(to_jsonable_python(value, fallback=repr))


def _normalise(value: object) -> object:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {key: _normalise(item) for key, item in cast('dict[str, object]', value).items()}
    if isinstance(value, list):
        return [_normalise(item) for item in cast('list[object]', value)]
    return value
