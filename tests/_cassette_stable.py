"""`all_messages()` of a run, without what differs between two identical runs: for cassette tests."""

from __future__ import annotations

from typing import Any

from pydantic_ai import ModelMessagesTypeAdapter
from pydantic_ai.messages import ModelMessage

VOLATILE = frozenset({'timestamp', 'run_id', 'conversation_id', 'tool_call_id', 'provider_response_id'})


def stable(messages: list[ModelMessage]) -> Any:
    """The messages as JSON, with timestamps and ids left out."""
    return _clean(ModelMessagesTypeAdapter.dump_python(messages, mode='json'))


def _clean(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items() if k not in VOLATILE}  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, list):
        return [_clean(v) for v in value]  # pyright: ignore[reportUnknownVariableType]
    return value
