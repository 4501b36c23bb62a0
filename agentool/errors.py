"""The one exception hierarchy of agentool.

Every error agentool raises on purpose is an `AgenToolError`: a bounded message naming what is
involved, and the same facts as structured `details` to branch on.

The tree (a built-in in brackets is a second base, see below):

    AgenToolError
    ├── InvalidInputError [ValueError]      the prompt or payload a caller sent is wrong
    │   ├── InvalidJSONError
    │   ├── NotAnObjectError
    │   ├── InputTooLargeError
    │   ├── InputValidationError
    │   └── UnknownOperationError
    ├── ConfigurationError                  an agentool's definition or an option is wrong
    │   ├── DuplicateNameError
    │   ├── InvalidUpdateError [ValueError]
    │   ├── SelectorError [LookupError]
    │   ├── ToolNameConflictError
    │   ├── InvalidToolNameError
    │   ├── DependencyError                 agentools and resources cannot be wired
    │   │   └── DependencyCycleError
    │   └── InjectorValidationError
    ├── AgenToolNotFoundError [LookupError] no agentool (or agent) by that name
    ├── RoutingError                        validated input cannot become a tool call
    │   ├── TransformError
    │   └── ToolArgumentError
    ├── OutputError                         a tool's value does not fit the output type
    ├── ToolRetryError                      a deterministic run was asked to retry
    ├── ToolFailedError                     a tool failed, or its call was denied
    ├── DepsUnavailableError                deps cannot be had where they were asked for
    │   └── MissingDepsError
    ├── MissingExtraError [ImportError]
    ├── PydanticAIVersionError [ImportError]
    ├── ServingError                        agentools cannot be served as asked
    │   ├── UnsafeServingError
    │   └── SessionLimitError
    ├── DispatchError                       a dispatch rule cannot answer a turn it claimed
    │   ├── DispatchTargetError [LookupError]
    │   └── DispatchOutputError
    └── DoubleError [AssertionError]        what a test scripted differs from what the code did
        ├── DriftError
        ├── ScriptExhaustedError
        ├── UnexpectedPromptError
        ├── UnrecordedCallError
        ├── ExpectationError
        └── CassetteError
            └── CassetteMismatchError

Every class has one agentool parent, so `except` on any node catches exactly its subtree. A
built-in is a second base where code unaware of agentool catches it for the same failure
(`AssertionError`: pytest reports a double's finding as a test failure).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from ._bounds import (
    MAX_DETAIL_CHARS,
    MAX_DETAIL_ITEMS,
    MAX_DETAILS_CHARS,
    MAX_MESSAGE_CHARS,
    QUOTE_CHARS,
    Budget,
    bounded_message,
    clip,
    did_you_mean,
    quote,
    suggest,
)

__all__ = (
    'MAX_MESSAGE_CHARS',
    'MAX_DETAIL_CHARS',
    'MAX_DETAIL_ITEMS',
    'MAX_DETAILS_CHARS',
    'QUOTE_CHARS',
    'quote',
    'clip',
    'suggest',
    'did_you_mean',
    'AgenToolError',
    'InvalidInputError',
    'InvalidJSONError',
    'NotAnObjectError',
    'InputTooLargeError',
    'InputValidationError',
    'UnknownOperationError',
    'ConfigurationError',
    'DuplicateNameError',
    'InvalidUpdateError',
    'AgenToolNotFoundError',
    'RoutingError',
    'TransformError',
    'ToolArgumentError',
    'OutputError',
    'ToolRetryError',
    'ToolFailedError',
    'DepsUnavailableError',
    'MissingDepsError',
    'SelectorError',
    'ToolNameConflictError',
    'InvalidToolNameError',
    'MissingExtraError',
    'PydanticAIVersionError',
    'ServingError',
    'UnsafeServingError',
    'SessionLimitError',
    'DependencyError',
    'DependencyCycleError',
    'InjectorValidationError',
    'DispatchError',
    'DispatchTargetError',
    'DispatchOutputError',
    'DoubleError',
    'DriftError',
    'ScriptExhaustedError',
    'UnexpectedPromptError',
    'UnrecordedCallError',
    'ExpectationError',
    'CassetteError',
    'CassetteMismatchError',
)


class AgenToolError(Exception):
    """Base of every error agentool raises: `message`, the `agentool` if any, JSON-safe `details`."""

    def __init__(self, message: str, *, agentool: str | None = None, **details: Any) -> None:
        message = bounded_message(str(message))
        if isinstance(cast(object, agentool), str):
            agentool = clip(cast(str, agentool), MAX_DETAIL_CHARS)
        super().__init__(message)
        self.message = message
        self.agentool = agentool
        given = {'agentool': agentool, **details} if agentool else details
        budget = Budget()
        self.details: dict[str, Any] = {key: budget.bounded(value) for key, value in given.items()}

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled whatever its `__init__` takes: durable engines store a run's error and read it back.
        return _restore, (type(self), self.args), self.__dict__


def _restore(cls: type[AgenToolError], args: tuple[Any, ...]) -> AgenToolError:
    error = cls.__new__(cls)
    Exception.__init__(error, *args)
    return error


class InvalidInputError(AgenToolError, ValueError):
    """The input given to an agentool cannot be turned into a valid operation."""


class InvalidJSONError(InvalidInputError):
    """The input is not valid JSON; `details` has `position`, `line` and `column`."""


class NotAnObjectError(InvalidInputError):
    """The input is valid JSON but not a JSON object; `details['json_type']` says what it was."""


class InputTooLargeError(InvalidInputError):
    """The input exceeds the agentool's `max_input_bytes`; checked before any parsing."""


class InputValidationError(InvalidInputError):
    """The input does not validate against the agentool's input schema; `errors` is pydantic's list, JSON-safe."""

    def __init__(
        self, message: str, *, agentool: str | None = None, errors: Sequence[dict[str, Any]] = (), **details: Any
    ) -> None:
        self.errors: list[dict[str, Any]] = list(errors)
        super().__init__(message, agentool=agentool, errors=self.errors, **details)


class UnknownOperationError(InvalidInputError):
    """The operation named in the input has no route; `details['known']` lists the valid ones."""


class ConfigurationError(AgenToolError):
    """An agentool's definition is inconsistent (routes, tools, schema, dependencies)."""


class DuplicateNameError(ConfigurationError):
    """An agentool with this name is already registered (pass `replace=True` to replace it)."""


class InvalidUpdateError(ConfigurationError, ValueError):
    """`AgenToolRegistry.update` was given a field it cannot change, or a value of the wrong type."""


class AgenToolNotFoundError(AgenToolError, LookupError):
    """No agentool (or agent) with this name is registered; `details` has `name` and `suggestions`."""


class RoutingError(AgenToolError):
    """Validated input could not be turned into a tool call."""


class TransformError(RoutingError):
    """An operation's transform raised or returned something that is not a dict of arguments."""


class ToolArgumentError(RoutingError):
    """The arguments produced for a tool do not fit its signature (missing or unexpected parameter)."""


class OutputError(AgenToolError):
    """A tool's return value does not fit the agentool's output type."""


class ToolRetryError(AgenToolError):
    """A deterministic run was asked to retry (`ModelRetry`, or output failed validation): it cannot, so it ends."""


class ToolFailedError(AgenToolError):
    """A tool failed (`ToolFailed`), or its call was denied or interrupted; see `details['outcome']`."""


class DepsUnavailableError(AgenToolError):
    """Dependencies cannot be had where they were asked for (the message says what to use instead)."""


class MissingDepsError(DepsUnavailableError):
    """An agentool declares a `deps_type`, no deps were given, and the injector cannot build them.

    `details` has `deps_type`, `reason` and, if to blame, the `field` and `type` left unfilled.
    """


class SelectorError(ConfigurationError, LookupError):
    """An include/exclude selector names nothing; `details` has `selector`, `option` and `suggestions`."""


class ToolNameConflictError(ConfigurationError):
    """Two exposed operations would get the same tool name; `details` has `tool_name` and `operations`."""


class InvalidToolNameError(ConfigurationError):
    """A tool name breaks `agentool.filters.TOOL_NAME_PATTERN`; `details` has `tool_name` and `rule`."""


class MissingExtraError(AgenToolError, ImportError):
    """A feature needs an optional extra that is not installed; `details['extra']` names it."""


class PydanticAIVersionError(AgenToolError, ImportError):
    """The installed pydantic-ai is unsupported (`import agentool`); `details` has `installed`, `supported`."""


class ServingError(AgenToolError):
    """Agentools cannot be served as asked: an option is wrong, the address is unusable, or a token is."""


class UnsafeServingError(ServingError):
    """Refused to serve without a token on a non-loopback address (unless `allow_unauthenticated`)."""


class SessionLimitError(ServingError):
    """A new MCP session was refused: its client (429) or the server (503) has as many open as allowed."""


class DependencyError(ConfigurationError):
    """A dependency cannot be wired: not registered, not an agentool, or no factory provides its type."""


class DependencyCycleError(DependencyError):
    """Agentools (or resource factories) depend on each other in a cycle; `details['path']` lists it."""


class InjectorValidationError(ConfigurationError):
    """`AgenToolInjector.validate()` found problems; `problems` lists them all, each a typed `AgenToolError`."""

    def __init__(self, message: str, *, problems: Sequence[AgenToolError]) -> None:
        self.problems: list[AgenToolError] = list(problems)
        super().__init__(
            message,
            problems=[{'error': type(p).__name__, 'message': p.message, 'details': p.details} for p in self.problems],
        )


class DispatchError(AgenToolError):
    """The dispatch stage could not answer a turn a rule claimed; `details['rule']` names the rule."""


class DispatchTargetError(DispatchError, LookupError):
    """A rule names no registered agentool, or a JSON prompt fits the operations of several."""


class DispatchOutputError(DispatchError):
    """An agentool's answer does not fit the agent's `output_type`."""


class DoubleError(AgenToolError, AssertionError):
    """A test double found that the code under test does not match what the test scripted."""


class DriftError(DoubleError):
    """A scripted step no longer fits the agent; `details` has `tool`, `cause`, `fields`, `errors`."""


class ScriptExhaustedError(DoubleError):
    """A run asked a double for more than was scripted: a step past the last, or a script used up."""


class UnexpectedPromptError(DoubleError):
    """No script of a double matches the prompt of a run; `details` has `prompt` and `scripts`."""


class UnrecordedCallError(DoubleError):
    """Replay met a tool call (tool name and canonical arguments) the recording does not hold."""


class ExpectationError(DoubleError):
    """An assertion helper failed: a tool not called, called otherwise, too often or out of order."""


class CassetteError(DoubleError):
    """A cassette cannot be used: missing, unreadable, too large, not a cassette, unwritable, stale.

    `details` has `path` and `reason` (`missing`, `too_large`, `too_deep`, `invalid_json`,
    `invalid`, `unencodable`, `unwritable`, `unreadable`, `nul`, `not_a_path`, `version`, `mode`,
    `model`, `redact`, `scrub`, `no_model`, `no_toolset`, `stale`, `linked`, `result`).
    """


class CassetteMismatchError(CassetteError):
    """A model request matches nothing the cassette holds; `details` has `fingerprint`, `changes`, `path`."""
