"""The typed errors that end a deterministic run (which cannot retry) when the manager tool asks for
a retry or reports a failure: `ToolRetryError`, `ToolFailedError`, the same on every path."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic_ai.messages import ToolReturnPart

from ...errors import ToolFailedError, ToolRetryError
from ._call_args import MANAGER_TOOL_NAME

__all__ = ('retry_error', 'retried_error', 'failed_error', 'output_retry_error', 'ToolRaised')


def retry_error(agentool: str, message: str) -> ToolRetryError:
    """The `ToolRetryError` a run raises when a tool raises `ModelRetry(message)`."""
    # The feedback text is built by the same public message part a run sends back to the model.
    part = ToolReturnPart(MANAGER_TOOL_NAME, message, tool_call_id='agentool', outcome='retried')
    return retried_error(agentool, MANAGER_TOOL_NAME, part.model_response_str())


def retried_error(agentool: str, tool: str | None, feedback: str) -> ToolRetryError:
    """The `ToolRetryError` for a retry `tool` (`None`: the output) asked a deterministic model for."""
    source = 'the output' if tool is None else f'tool {tool!r}'
    return ToolRetryError(
        f'agentool {agentool!r}: {source} asked the model to retry, which a deterministic model cannot do: {feedback}',
        agentool=agentool,
        tool=tool,
        feedback=feedback,
    )


def output_retry_error(
    agentool: str, tool: str, errors: Iterable[Mapping[str, Any]], key: str | None = None
) -> ToolRetryError:
    """The `ToolRetryError` a run raises when the output tool `tool` refuses the tool's value.

    Built from the validation errors alone, so a graph run and a lean run say the same.
    """
    found: list[dict[str, Any]] = []
    for e in errors:
        loc = list(e.get('loc', ()))
        found.append({'type': e['type'], 'loc': loc[1:] if key and loc[:1] == [key] else loc, 'msg': e['msg']})
    problems = '; '.join(f'{".".join(map(str, e["loc"])) or "<output>"}: {e["msg"]}' for e in found)
    return ToolRetryError(
        f'agentool {agentool!r}: the output does not validate as output tool {tool!r} takes it, and a deterministic '
        f'model cannot retry: {problems}',
        agentool=agentool,
        tool=tool,
        feedback=problems,
        errors=found,
    )


def failed_error(agentool: str, message: str, outcome: str = 'failed') -> ToolFailedError:
    """The `ToolFailedError` a run raises when a tool raises `ToolFailed(message)` (or its call ends with
    another `outcome`: denied, interrupted)."""
    return ToolFailedError(
        f'agentool {agentool!r}: tool {MANAGER_TOOL_NAME!r} {outcome}: {message}',
        agentool=agentool,
        tool=MANAGER_TOOL_NAME,
        outcome=outcome,
        feedback=message,
    )


class ToolRaised(str):
    """A tool's own exception, returned by the manager tool (a `str`, serialised like any return) for
    `AgenToolModel` to raise unchanged: pydantic-ai would turn a raised `ValidationError` into a retry."""

    error: BaseException

    def __new__(cls, error: BaseException) -> ToolRaised:
        raised = super().__new__(cls, f'{type(error).__name__}: {error}')
        raised.error = error
        return raised
