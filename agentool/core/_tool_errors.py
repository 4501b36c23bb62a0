"""The typed errors a run raises when the manager tool asks for a retry or reports a failure.

A deterministic model cannot retry, so `ModelRetry` and `ToolFailed` from a tool end the run with
`ToolRetryError` / `ToolFailedError`. The direct path and lean runs raise the same errors as the
graph, built here from the same public message part a run sends back to the model.
"""

from __future__ import annotations

from pydantic_ai.messages import ToolReturnPart

from ..errors import ToolFailedError, ToolRetryError
from .manager import MANAGER_TOOL_NAME

__all__ = ('retry_error', 'failed_error', 'ToolRaised')


def retry_error(agentool: str, message: str) -> ToolRetryError:
    """The `ToolRetryError` a run raises when a tool raises `ModelRetry(message)`."""
    # The feedback text is built by the same public message part a run sends back to the model.
    part = ToolReturnPart(MANAGER_TOOL_NAME, message, tool_call_id='agentool', outcome='retried')
    feedback = part.model_response_str()
    return ToolRetryError(
        f'agentool {agentool!r}: tool {MANAGER_TOOL_NAME!r} asked the model to retry, which a deterministic model '
        f'cannot do: {feedback}',
        agentool=agentool,
        tool=MANAGER_TOOL_NAME,
        feedback=feedback,
    )


def failed_error(agentool: str, message: str) -> ToolFailedError:
    """The `ToolFailedError` a run raises when a tool raises `ToolFailed(message)`."""
    return ToolFailedError(
        f'agentool {agentool!r}: tool {MANAGER_TOOL_NAME!r} failed: {message}',
        agentool=agentool,
        tool=MANAGER_TOOL_NAME,
        outcome='failed',
        feedback=message,
    )


class ToolRaised(str):
    """A tool's own exception, carried through pydantic-ai as the manager tool's return value.

    pydantic-ai turns a `ValidationError` raised inside a tool into a request to retry, but a tool's
    own exception must end a deterministic run unchanged, as it does on the direct path and in lean
    runs. So in a run driven by `AgenToolModel` the manager tool returns it wrapped in this, and the
    model raises it when it reads the return: the run never completes with it. A `str` (the error's
    text), so the framework can serialise the return in between like any other.
    """

    error: BaseException

    def __new__(cls, error: BaseException) -> ToolRaised:
        raised = super().__new__(cls, f'{type(error).__name__}: {error}')
        raised.error = error
        return raised
