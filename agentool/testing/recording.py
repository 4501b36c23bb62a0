"""The recording file: what real runs did, kept as JSON so a test can replay it without a model.

One file holds any number of runs. Each run keeps its prompt, the tool calls the model made (one
list per model response, only the calls that returned), what every tool returned, and the run's
final output. Tool results are looked up by tool name and canonical arguments (sorted-key JSON).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, cast

from pydantic import BaseModel, ValidationError
from pydantic_core import to_jsonable_python

from ..errors import ConfigurationError

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
        """Read a recording file.

        Raises:
            ConfigurationError: the file is missing or is not a recording.
        """
        file = Path(path)
        try:
            return cls.model_validate_json(file.read_bytes())
        except FileNotFoundError:
            raise ConfigurationError(
                f'recording {str(file)!r} does not exist; record it first with Recorder({str(file)!r})', path=str(file)
            ) from None
        except ValidationError as error:
            raise ConfigurationError(f'{str(file)!r} is not an agentool recording: {error}', path=str(file)) from None
        except OSError as error:  # a directory, no permission...
            raise ConfigurationError(
                f'cannot read recording {str(file)!r}: {error.strerror or error}', path=str(file), error=str(error)
            ) from None

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the recording to `path` (parent directories are created; the file is replaced whole).

        Raises:
            ConfigurationError: the file cannot be written there (a directory, no permission...).
        """
        file = Path(path)
        text = json.dumps(self.model_dump(mode='json'), indent=2, ensure_ascii=False) + '\n'
        try:
            file.parent.mkdir(parents=True, exist_ok=True)
            # Written next to the target, then renamed over it, so a crash never leaves half a recording.
            handle, temporary = tempfile.mkstemp(dir=file.parent, prefix=f'.{file.name}.', suffix='.tmp')
        except OSError as error:
            raise _unwritable(file, error) from None
        try:
            with os.fdopen(handle, 'w', encoding='utf-8') as stream:
                stream.write(text)
            os.replace(temporary, file)
        except BaseException as error:
            Path(temporary).unlink(missing_ok=True)
            if isinstance(error, OSError):
                raise _unwritable(file, error) from None
            raise


def _unwritable(file: Path, error: OSError) -> ConfigurationError:
    return ConfigurationError(
        f'cannot write recording {str(file)!r}: {error.strerror or error}', path=str(file), error=str(error)
    )


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
