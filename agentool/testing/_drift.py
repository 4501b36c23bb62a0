"""Drift: turning a mismatch between a script and the real agent into a `DriftError` that names the tool and field.

Two sources. Before a call goes out, a cheap check of the tool's JSON schema (the tool is offered,
required fields present, no unknown fields) catches the common drift even when the agent allows no
retries. Everything else is left to pydantic-ai's own validators: when they reject a scripted call
or output, the run comes back with a retry, and the retry's error list is what the message quotes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, cast

from pydantic_ai.messages import ToolReturnPart
from pydantic_ai.tools import ToolDefinition

from ..errors import DriftError, clip

__all__ = ('check_call', 'tool_retry_error', 'output_feedback_error')


def check_call(where: str, tool: str, args: Mapping[str, Any], offered: Sequence[ToolDefinition]) -> None:
    """Raise `DriftError` when `tool` is not offered, or `args` lack a required field or add an unknown one."""
    definition = next((d for d in offered if d.name == tool), None)
    if definition is None:
        names = ', '.join(repr(d.name) for d in offered) or 'none'
        raise DriftError(
            f'{where} calls tool {tool!r}, which the agent does not offer (offered: {names})',
            tool=tool,
            cause='unknown_tool',
            fields=[],
            offered=[d.name for d in offered],
        )
    schema = definition.parameters_json_schema
    properties: dict[str, Any] = schema.get('properties', {})
    missing = [name for name in schema.get('required', []) if name not in args]
    closed = schema.get('additionalProperties') is False
    unknown = [name for name in args if name not in properties] if closed else []
    if missing:
        also = f'; it also passes {_names(unknown)}, which it does not take' if unknown else ''
        raise DriftError(
            f'{where} calls tool {tool!r} without its required {_names(missing)}{also}',
            tool=tool,
            cause='missing_field',
            fields=[*missing, *unknown],  # every drifted field, not only the first kind found
        )
    if unknown:
        known = ', '.join(map(repr, properties)) or 'none'
        raise DriftError(
            f'{where} calls tool {tool!r} with {_names(unknown)}, which it does not take (fields: {known})',
            tool=tool,
            cause='unknown_field',
            fields=unknown,
        )


def _names(fields: list[str]) -> str:
    return f'field {fields[0]!r}' if len(fields) == 1 else f'fields {", ".join(map(repr, fields))}'


def tool_retry_error(where: str, part: ToolReturnPart, *, is_output: bool) -> DriftError:
    """The `DriftError` for a retried tool return: rejected arguments, a rejected output, or a tool's `ModelRetry`."""
    cause = part.retry.cause if part.retry is not None else 'model_retry'
    subject = 'the scripted output' if is_output else f'the scripted call to tool {part.tool_name!r}'
    tool = None if is_output else part.tool_name
    errors = _error_list(part.content)
    if errors is not None:
        return _validation_error(f'{where}: the agent rejected {subject}', tool, cause, errors)
    feedback = str(part.content)
    verb = 'rejected' if is_output else 'asked for a retry of'
    return DriftError(
        f'{where}: the agent {verb} {subject}: {feedback}', tool=tool, cause=cause, fields=[], feedback=feedback
    )


def output_feedback_error(where: str, feedback: str) -> DriftError:
    """The `DriftError` for retry feedback on a text, native or prompted output."""
    errors = _errors_in(feedback)
    if errors is not None:
        return _validation_error(f'{where}: the agent rejected the scripted output', None, 'validation_error', errors)
    message = _fenced(feedback)
    return DriftError(
        f'{where}: the agent rejected the scripted output: {message}',
        tool=None,
        cause='model_retry',
        fields=[],
        feedback=feedback,
    )


def _validation_error(prefix: str, tool: str | None, cause: str, errors: list[dict[str, Any]]) -> DriftError:
    fields = [_loc(error.get('loc', ())) for error in errors]
    problems = '; '.join(
        f'field {name!r}: {error.get("msg", "invalid")}{_got(error)}'
        for name, error in zip(fields, errors, strict=True)
    )
    return DriftError(f'{prefix}: {problems}', tool=tool, cause=cause, fields=fields, errors=errors)


def _got(error: dict[str, Any]) -> str:
    if 'input' not in error or error.get('type') == 'missing':
        return ''
    return f' (got {clip(json.dumps(error["input"], default=repr))})'


def _error_list(content: object) -> list[dict[str, Any]] | None:
    if isinstance(content, list):
        items = cast('list[object]', content)
        if all(isinstance(item, dict) for item in items):
            return cast('list[dict[str, Any]]', items)
    return None


def _errors_in(feedback: str) -> list[dict[str, Any]] | None:
    # Output retry feedback reaches the model as text that embeds pydantic's error list as JSON.
    match = re.search(r'\[\s*\{.*\}\s*\]', feedback, re.DOTALL)
    if match is None:
        return None
    try:
        return _error_list(json.loads(match.group()))
    except ValueError:
        return None


def _fenced(feedback: str) -> str:
    # The feedback wraps the validator's message in a tag pair; show the message itself when there is one.
    match = re.search(r'<([\w:.-]+)>\s*(.*?)\s*</\1>', feedback, re.DOTALL)
    return match.group(2) if match else feedback.strip()


def _loc(loc: Sequence[Any]) -> str:
    return '.'.join(str(part) for part in loc) or '<root>'
