"""The recording file: what real runs did, kept as JSON so a test can replay it without a model.

One file holds any number of runs. Each run keeps its prompt, the tool calls the model made (one
list per model response, only the calls that returned), what every tool returned, and the run's
final output. Tool results are looked up by tool name and canonical arguments (sorted-key JSON).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any, Literal, cast

from pydantic import BaseModel, ValidationError
from pydantic_core import to_jsonable_python

from ..errors import ConfigurationError
from ._files import as_path, read_json, write_json

__all__ = ('RecordedCall', 'RecordedToolCall', 'RecordedRun', 'Recording', 'canonical_args')


class RecordedCall(BaseModel):
    """A tool call the model made: the tool name and the arguments it sent."""

    tool: str
    args: dict[str, Any]


class RecordedToolCall(RecordedCall):
    """A tool call and what the tool returned (as JSON-compatible data)."""

    result: Any = None


class RecordedRun(BaseModel):
    """One recorded run."""

    prompt: str
    steps: list[list[RecordedCall]]
    """The model's tool calls, one list per model response."""
    tool_calls: list[RecordedToolCall]
    """Every tool call that returned, in the order the results came back."""
    output: Any = None
    """The run's final output, as JSON-compatible data."""


class Recording(BaseModel):
    """A recording file's content."""

    format: Literal['agentool-recording'] = 'agentool-recording'
    version: Literal[1] = 1
    runs: list[RecordedRun] = []

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Recording:
        """Read a recording file (at most 64 MB, checked before parsing).

        Raises:
            ConfigurationError: the file is missing, too large, unreadable or not a recording, or
                the path is not one (empty, a NUL byte).
        """
        file = as_path(path, 'recording', ConfigurationError)
        data = read_json(
            file,
            'recording',
            ConfigurationError,
            missing=f'recording {str(file)!r} does not exist; record it first with Recorder({str(file)!r})',
        )
        return cls.from_data(data, source=str(file))

    @classmethod
    def from_data(cls, data: Any, *, source: str = 'the recording') -> Recording:
        """Validate parsed JSON as a recording."""
        try:
            return cls.model_validate(data)
        except ValidationError as error:
            raise ConfigurationError(
                f'{source!r} is not an agentool recording: {error}', path=source, reason='invalid'
            ) from None

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the recording to `path` (parent directories are created; the file is replaced whole).

        Raises:
            ConfigurationError: the file cannot be written there (a directory, no permission, a NUL
                in the path), or the data has text UTF-8 cannot encode (a lone surrogate).
        """
        file = as_path(path, 'recording', ConfigurationError)
        write_json(file, self.model_dump(mode='json'), 'recording', ConfigurationError)


def canonical_args(args: Mapping[str, Any]) -> str:
    """Arguments as canonical JSON: sorted keys, no spaces, integral floats written as integers.

    Two calls with the same arguments get the same text, whatever the key order or whether a
    number came back as `2` or `2.0`.
    """
    return json.dumps(_normalise(to_jsonable_python(args)), sort_keys=True, separators=(',', ':'), ensure_ascii=False)


def _normalise(value: object) -> object:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {key: _normalise(item) for key, item in cast('dict[str, object]', value).items()}
    if isinstance(value, list):
        return [_normalise(item) for item in cast('list[object]', value)]
    return value
