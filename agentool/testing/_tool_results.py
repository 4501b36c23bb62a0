"""A tool's result as a cassette writes it, and as replay gives it back: the type the tool returned.

Values JSON turns into another type are noted by pointer (`_kept_types`); what only a class rebuilds
(a model, a dataclass, an enum) goes through the tool's return annotation (`annotated`).
"""

from __future__ import annotations

import dataclasses
import typing
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, cast

from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic_ai import RunContext
from pydantic_ai.messages import ToolCallPart
from pydantic_ai.toolsets import AbstractToolset, FunctionToolset, ToolsetTool
from pydantic_core import to_jsonable_python

from ..errors import CassetteError, UnrecordedCallError
from ._kept_types import lost_types, restored
from .cassette import RecordedToolCall, canonical_args
from .log import CallLog, CallRecord

_ANY: TypeAdapter[Any] = TypeAdapter(Any)
_POINTER = '/result'

Home = tuple['AbstractToolset[Any] | None', str]
"""Where a tool lives: the toolset that runs it, and its name there (a `prepare` may rename it)."""


def home(tool: ToolsetTool[Any] | None, name: str) -> Home:
    """Where the tool offered as `tool` (named `name` to the model) lives."""
    if tool is None:
        return None, name
    return tool.toolset, getattr(tool, 'original_name', None) or name


def tool_home(ctx: RunContext[Any], name: str) -> Home:
    """Where the tool the run offers as `name` lives: its function's return annotation types the result."""
    tools = ctx.tool_manager.tools if ctx.tool_manager is not None else None
    return home(tools.get(name) if tools is not None else None, name)


def _adapter(function: Callable[..., Any]) -> TypeAdapter[Any] | None:
    try:
        annotation = typing.get_type_hints(function, include_extras=True).get('return')
        return None if annotation is None else TypeAdapter(annotation)
    except Exception:  # a name the hints cannot resolve, a type pydantic cannot validate
        return None


def written_result(result: Any, returns: TypeAdapter[Any] | None) -> tuple[Any, dict[str, str], bool]:
    """`result` as JSON data, the types it loses, and whether `returns` (the annotation) rebuilds it."""
    try:
        data = to_jsonable_python(result, fallback=repr)
    except UnicodeDecodeError:  # bytes that are not UTF-8 text
        data = to_jsonable_python(result, fallback=repr, bytes_mode='base64')
    live = _ANY.dump_python(result, fallback=repr)
    types = lost_types(live, data, _POINTER)
    back = restored(data, types, _POINTER)
    annotated = False
    # Not a set of text: another process may iterate it otherwise, and the next request would not match.
    if returns is not None and not _same(back, result) and not _holds_text_set(live):
        try:
            annotated = _same(returns.validate_python(back), result)
        except ValidationError:
            annotated = False
    return data, types, annotated


def _holds_text_set(value: object) -> bool:
    if isinstance(value, set | frozenset):
        return not all(isinstance(item, int | float) for item in cast('set[object]', value))
    if isinstance(value, Mapping):
        return any(_holds_text_set(item) for item in cast('Mapping[object, object]', value).values())
    if isinstance(value, list | tuple):
        return any(_holds_text_set(item) for item in cast('list[object]', value))
    return False


def replayed_result(
    data: Any, types: Mapping[str, str], annotated: bool, returns: TypeAdapter[Any] | None
) -> tuple[Any, str | None]:
    """The recorded `data` as the tool returned it, and why it could not be (`None` when it was)."""
    value = restored(data, types, _POINTER)
    if not annotated:
        return value, None
    if returns is None:
        return value, 'the tool has no return annotation now'
    try:
        return returns.validate_python(value), None
    except ValidationError as error:
        return value, f'it no longer fits the return annotation: {error.error_count()} error(s)'


def _same(a: object, b: object) -> bool:
    """Equal and of the same types all the way down (`1 == 1.0` and `'x' == 'x'` in a subclass are not)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, BaseModel):
        b_model = cast(BaseModel, b)
        return a == b_model and all(_same(getattr(a, k), getattr(b_model, k)) for k in type(a).model_fields)
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        return a == b and all(_same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    if isinstance(a, Mapping):
        a_map, b_map = cast('Mapping[Any, Any]', a), cast('Mapping[Any, Any]', b)
        return a_map.keys() == b_map.keys() and all(_same(a_map[k], b_map[k]) for k in a_map)
    if isinstance(a, list | tuple):
        a_seq, b_seq = cast('list[Any]', a), cast('list[Any]', b)
        return len(a_seq) == len(b_seq) and all(_same(x, y) for x, y in zip(a_seq, b_seq, strict=True))
    try:
        return bool(a == b)
    except Exception:  # an `__eq__` that raises is not equal
        return False


@dataclass(frozen=True)
class Served:
    """A recorded result answering a call, as the tool returned it (which may be `None`)."""

    value: Any


class ToolAnswers:
    """The tool results of a cassette, served by (tool, canonical arguments)."""

    def __init__(
        self,
        calls: Iterable[RecordedToolCall],
        source: str,
        *,
        clean: Callable[[str, dict[str, Any]], dict[str, Any]] | None = None,
        hint: str = '',
        path: str | None = None,
    ) -> None:
        self.source = source
        self.path = path
        self.hint = hint  # how to record a call that was not
        # Sent arguments are looked up as they were written (scrubbed, redacted), like the records.
        self._clean = clean
        self._results: dict[tuple[str, str], list[RecordedToolCall]] = {}
        self._served: Counter[tuple[str, str]] = Counter()
        # once per function and cassette, not module-wide: building a validator is the costly part
        self._adapters: dict[Callable[..., Any], TypeAdapter[Any] | None] = {}
        for call in calls:
            self._results.setdefault((call.tool, canonical_args(call.args)), []).append(call)

    def serve(self, call: ToolCallPart, run_id: str | None, log: CallLog, where: Home) -> Served | None:
        """The next recorded result of `call`, noted in `log` (`None`: none recorded); a `CassetteError`
        when it was recorded through a return annotation now gone or not fitting."""
        __tracebackhide__ = True  # cassette errors point at the test, not here
        tool, sent = call.tool_name, call.args_as_dict()
        key = (tool, canonical_args(sent if self._clean is None else self._clean(tool, sent)))
        results = self._results.get(key)
        if not results:
            return None
        recorded = results[min(self._served[key], len(results) - 1)]
        self._served[key] += 1
        returns = self.returns(where) if recorded.annotated else None
        value, problem = replayed_result(recorded.result, recorded.types, recorded.annotated, returns)
        if problem is not None:
            raise CassetteError(
                f'{self.source}: the recorded result of tool {tool!r} was rebuilt through its return '
                f'annotation, but {problem}{f"; {self.hint}" if self.hint else ""}',
                path=self.path,
                reason='result',
                tool=tool,
            )
        log.add(answered(tool, sent, call.tool_call_id, run_id, value))
        return Served(value)

    def returns(self, where: Home) -> TypeAdapter[Any] | None:
        """A validator of the tool's return annotation, once per function; `None` when it has none."""
        toolset, name = where
        function_tool = toolset.tools.get(name) if isinstance(toolset, FunctionToolset) else None
        if function_tool is None:
            return None
        function = function_tool.function
        if function not in self._adapters:
            self._adapters[function] = _adapter(function)
        return self._adapters[function]

    def unrecorded(self, tool: str, args: dict[str, Any]) -> UnrecordedCallError:
        text = canonical_args(args)
        same_tool = [a for (t, a) in self._results if t == tool]
        tools = ', '.join(sorted({t for t, _ in self._results})) or 'none'
        recorded = '; '.join(same_tool) if same_tool else f'none (recorded tools: {tools})'
        return UnrecordedCallError(
            f'replay: tool {tool!r} was called with {text}, which {self.source} does not hold; '
            f'recorded calls of {tool!r}: {recorded}{f"; {self.hint}" if self.hint else ""}',
            tool=tool,
            args=text,
            recorded=same_tool,
        )


def answered(tool: str, args: dict[str, Any], call_id: str | None, run_id: str | None, result: Any) -> CallRecord:
    return CallRecord(
        tool=tool, args=args, call_id=call_id or '', run_id=run_id, returned=True, result=result, outcome='success'
    )
