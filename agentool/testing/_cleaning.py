"""What a cassette writes, cleaned: scrubbed of secrets by default, then passed through `redact=`.

One `Cleaner` per `CassetteModel`: it cleans each entry before it is written (an exchange, a tool
call), a live request for matching against what was written, the arguments of a tool call for
looking up its recorded result, and a stream whose deltas would split a secret. On replay,
`typed_placeholders` gives a scrubbed number or boolean in a tool call's arguments a value of
its type back, so the call still validates.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from pydantic_ai import ModelMessagesTypeAdapter
from pydantic_ai.messages import (
    ModelResponse,
    ModelResponsePart,
    ModelResponseStreamEvent,
    PartDeltaEvent,
    PartEndEvent,
    PartStartEvent,
    ToolCallPart,
)
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.tools import ToolDefinition

from ..errors import CassetteError
from .scrub import PLACEHOLDER
from .scrub import scrub as scrub_data

__all__ = ('Cleaner', 'Redactor', 'typed_placeholders')

Redactor = Callable[[dict[str, Any]], dict[str, Any]]
"""Called with each entry's JSON before it is written, after the default scrubbing: a new exchange
(`fingerprint`, `request`, `response`, `stream`) or, through `CassetteTools`, a tool call (`tool`,
`args`, `result`); returns what to keep. The fingerprint was taken before, so a redacted cassette
still matches the live request; a request the cassette does not hold as sent is matched on its
written form too (scrubbed, and redacted by the hook when the replaying model has it), so a
replayed history holding placeholders matches as well."""

_EMPTY: dict[str, Any] = {'response': {}, 'stream': None}


@dataclass(frozen=True, kw_only=True)
class Cleaner:
    """Scrubs (when `scrub`) then redacts (when `redact`) what a cassette writes and matches."""

    scrub: bool
    redact: Redactor | None

    def clean(self, data: dict[str, Any], path: str | None) -> dict[str, Any]:
        """`data` (an exchange or a tool call, as JSON) as it is written; `path` names the cassette in errors."""
        __tracebackhide__ = True  # cassette errors point at the test, not here
        cleaned = cast('dict[str, Any]', scrub_data(data)) if self.scrub else data
        if self.redact is None:
            return cleaned
        redacted = cast(object, self.redact(copy.deepcopy(cleaned)))
        if not isinstance(redacted, dict):
            raise CassetteError(
                f'the redaction hook returned {type(redacted).__name__}, not the exchange dict',
                path=path,
                reason='redact',
            )
        return cast('dict[str, Any]', redacted)

    def request(self, view: dict[str, Any]) -> dict[str, Any]:
        """A live request's view as a cassette would have written it (for matching)."""
        cleaned = scrub_data(view) if self.scrub else view
        if self.redact is not None:
            try:
                redacted = cast(object, self.redact({'fingerprint': '', 'request': copy.deepcopy(cleaned)} | _EMPTY))
            except Exception:  # a hook written for whole exchanges only: match the request unredacted
                return cleaned
            request = cast('dict[str, Any]', redacted).get('request') if isinstance(redacted, dict) else None
            if isinstance(request, dict):
                return cast('dict[str, Any]', request)
        return cleaned

    def args(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        """A tool call's arguments as a cassette would have written them (for looking up its result)."""
        cleaned = self.clean({'tool': tool, 'args': args, 'result': None}, None).get('args')
        return cast('dict[str, Any]', cleaned) if isinstance(cleaned, dict) else args

    def stream(self, events: list[ModelResponseStreamEvent], response: ModelResponse) -> list[ModelResponseStreamEvent]:
        """The stream, with its deltas folded into whole parts when the response held a secret.

        A secret split across deltas matches no pattern piece by piece; whole parts scrub like the
        response does. Only such a stream loses its deltas: the replay still starts and ends each part.
        """
        if not self.scrub:
            return events
        dumped = ModelMessagesTypeAdapter.dump_python([response], mode='json')[0]
        if scrub_data(dumped) == dumped:
            return events
        parts = response.parts
        folded: list[ModelResponseStreamEvent] = []
        for event in events:
            if isinstance(event, PartDeltaEvent):
                continue
            if isinstance(event, PartStartEvent | PartEndEvent) and event.index < len(parts):
                event = dataclasses.replace(event, part=parts[event.index])
            folded.append(event)
        return folded


_STAND_INS: dict[str, object] = {'integer': 0, 'number': 0, 'boolean': False}


def typed_placeholders(
    response: ModelResponse, events: list[ModelResponseStreamEvent] | None, parameters: ModelRequestParameters
) -> tuple[ModelResponse, list[ModelResponseStreamEvent] | None]:
    """A replayed response (and its stream) with each placeholder that stands for a scrubbed number
    or boolean in a tool call's top-level arguments made `0` or `false`, as the tool's schema wants.

    A `"pin": "<redacted>"` would fail the tool's validation and send the model a retry the cassette
    never saw; as `0` the call validates, and the next request, scrubbed, matches the recorded one.
    """
    tools = {tool.name: tool for tool in (*parameters.function_tools, *parameters.output_tools)}
    if not tools or PLACEHOLDER not in str([part.args for part in response.parts if isinstance(part, ToolCallPart)]):
        return response, events
    parts = [_typed(part, tools) for part in response.parts]
    response = dataclasses.replace(response, parts=parts)
    if events is not None:
        events = [
            dataclasses.replace(event, part=_typed(event.part, tools))
            if isinstance(event, PartStartEvent | PartEndEvent)
            else event
            for event in events
        ]
    return response, events


def _typed(part: ModelResponsePart, tools: dict[str, ToolDefinition]) -> ModelResponsePart:
    if not isinstance(part, ToolCallPart) or part.tool_name not in tools:
        return part
    properties: object = tools[part.tool_name].parameters_json_schema.get('properties')
    if not isinstance(properties, dict):
        return part
    schemas = cast('dict[str, object]', properties)
    args = part.args_as_dict()
    typed = {key: _stand_in(schemas.get(key)) if value == PLACEHOLDER else value for key, value in args.items()}
    if typed == args:
        return part
    return dataclasses.replace(part, args=typed if isinstance(part.args, dict) else json.dumps(typed))


def _stand_in(schema: object) -> object:
    # `0` or `false` where the property takes a number or a boolean and no string; else the placeholder.
    fields = cast('dict[str, Any]', schema) if isinstance(schema, dict) else {}
    kinds: list[Any] = [fields.get('type')]
    if isinstance(options := fields.get('anyOf'), list):
        kinds += [
            cast('dict[str, Any]', one).get('type') for one in cast('list[Any]', options) if isinstance(one, dict)
        ]
    names = [name for kind in kinds for name in (cast('list[Any]', kind) if isinstance(kind, list) else [kind])]
    if 'string' in names:
        return PLACEHOLDER
    return next((_STAND_INS[name] for name in names if isinstance(name, str) and name in _STAND_INS), PLACEHOLDER)
