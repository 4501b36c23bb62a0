"""The cassette: what a real model was sent and answered, one JSON file per test, replayable offline.

A cassette holds one entry per model request (an *exchange*): the request as the model saw it,
normalised for review (messages without timestamps, ids or run ids; tool definitions; output mode
and schema; the settings that change an answer), its fingerprint, the `ModelResponse` and, for a
streamed request, the stream's events in order. It can also hold tool results (`tool_calls`), so
a replay runs without the tools. The file is diff-friendly: sorted keys, two-space indent, one
exchange per entry, `"version": 1`.

Binary prompt content (images, documents, audio) is stored inline, base64-encoded as pydantic-ai
serialises it: a cassette is self-contained, and its fingerprint covers the bytes.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, TypeAdapter, ValidationError
from pydantic_ai import ModelMessagesTypeAdapter
from pydantic_ai.messages import ModelResponse, ModelResponseStreamEvent

from ..errors import CassetteError, clip, quote
from ._files import as_path, read_json, write_json
from .recording import RecordedToolCall

__all__ = ('FORMAT', 'VERSION', 'Cassette', 'CassetteInfo', 'Exchange', 'RecordMode')

FORMAT = 'agentool-cassette'
VERSION = 1

RecordMode = Literal['once', 'none', 'new_episodes', 'all']
"""How a `CassetteModel` uses its cassette.

- `none`: replay only; a missing cassette or an unmatched request fails (the CI default).
- `once`: record when the cassette file is missing, else replay only.
- `new_episodes`: replay what matches, record (and append) the rest.
- `all`: re-record everything, replacing the cassette.
"""

_events = TypeAdapter(list[ModelResponseStreamEvent])


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

    def model_response(self) -> ModelResponse:
        """The recorded `ModelResponse`."""
        message = ModelMessagesTypeAdapter.validate_python([self.response])[0]
        if not isinstance(message, ModelResponse):
            raise ValueError('the recorded response is a request, not a ModelResponse')
        return message

    def stream_events(self) -> list[ModelResponseStreamEvent]:
        """The recorded stream events (empty for a plain request)."""
        return _events.validate_python(self.stream or [])

    @staticmethod
    def dump_response(response: ModelResponse) -> dict[str, Any]:
        return ModelMessagesTypeAdapter.dump_python([response], mode='json')[0]

    @staticmethod
    def dump_events(events: list[ModelResponseStreamEvent]) -> list[dict[str, Any]]:
        return _events.dump_python(events, mode='json')


class Cassette(BaseModel):
    """A cassette file's content: the recorded model, its exchanges and, optionally, tool results."""

    format: Literal['agentool-cassette'] = FORMAT
    version: Literal[1] = VERSION
    model: CassetteInfo = Field(default_factory=CassetteInfo)
    exchanges: list[Exchange] = []
    tool_calls: list[RecordedToolCall] = []
    """Tool results, answered by tool name and canonical arguments when a replay runs without tools."""
    toolsets: dict[str, list[dict[str, Any]]] = {}
    """The tool definitions of each recorded toolset (an MCP server), by name, so a replay needs no
    server (see `CassetteToolset`); written only when there is one."""

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Cassette:
        """Read a cassette file (at most 64 MB, checked before parsing).

        Raises:
            CassetteError: the file is missing, too large, unreadable, not JSON, not a cassette or
                of another version; or the path is not one (empty, a NUL byte).
        """
        __tracebackhide__ = True  # cassette errors point at the test, not here
        file = as_path(path, 'cassette', CassetteError)
        data = read_json(
            file,
            'cassette',
            CassetteError,
            missing=f'cassette {str(file)!r} does not exist; record it first (record mode "once" or "all")',
        )
        return cls.from_data(data, source=str(file))

    @classmethod
    def from_data(cls, data: Any, *, source: str = 'the cassette') -> Cassette:
        """Validate parsed JSON as a cassette, naming a wrong format or version plainly."""
        __tracebackhide__ = True  # cassette errors point at the test, not here
        if isinstance(data, dict):
            fields: dict[str, Any] = data  # pyright: ignore[reportUnknownVariableType]
            if fields.get('format') != FORMAT:
                raise CassetteError(
                    f'{source!r} is not an agentool cassette (format {quote(fields.get("format"))})',
                    path=source,
                    reason='invalid',
                )
            if fields.get('version') != VERSION:
                raise CassetteError(
                    f'{source!r} is cassette version {quote(fields.get("version"))}; '
                    f'this agentool reads version {VERSION}',
                    path=source,
                    reason='version',
                )
        try:
            return cls.model_validate(data)
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
        if not data['toolsets']:
            del data['toolsets']  # a cassette without toolsets reads as before they existed
        write_json(as_path(path, 'cassette', CassetteError), data, 'cassette', CassetteError)


def cassette_path(path: object) -> Path:
    """`path` checked as a cassette path (see `Cassette.load`)."""
    __tracebackhide__ = True  # cassette errors point at the test, not here
    return as_path(path, 'cassette', CassetteError)
