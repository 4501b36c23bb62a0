"""What a double saw and did: every request it answered, every call it made, and assertions on them."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from pydantic_ai.messages import ModelMessage, ModelResponse, ToolReturnPart
from pydantic_ai.tools import ToolDefinition
from pydantic_core import to_json

from .._bounds import MAX_MESSAGE_CHARS, clip, quote
from .._options import check_instance, check_limit, check_text, refuse
from ..errors import ExpectationError

__all__ = ('CallRecord', 'RequestRecord', 'CallLog', 'Expected', 'side_by_side')


ARG_CHARS = 60  # of each argument's JSON a description keeps; the rest is stated by its length
ARGS_SHOWN = 20  # arguments of one call a description shows; the rest are counted


@dataclass(kw_only=True)
class CallRecord:
    """One tool call and, once it came back, its result."""

    tool: str
    args: dict[str, Any]
    call_id: str
    run_id: str | None = None
    returned: bool = False
    """Whether the result came back (it does in the next request of the run)."""
    result: Any = None
    outcome: str | None = None
    """The return's outcome: `'success'`, `'retried'`, `'failed'`, `'denied'` or `'interrupted'`."""

    def describe(self, *, width: int = ARG_CHARS, count: int = ARGS_SHOWN) -> str:
        """`tool(args)` with the arguments as compact JSON, each cut to `width`, at most `count` of them."""
        return f'{clip(self.tool, width)}({bounded_args(self.args, width=width, count=count)})'


def bounded_args(args: Mapping[str, Any], *, width: int = ARG_CHARS, count: int = ARGS_SHOWN) -> str:
    """`args` as compact JSON with each value (and name) cut to `width`, at most `count` of them."""
    items = list(args.items())
    shown = [f'{clip(_json(str(name)), width)}:{clip(_json(value), width)}' for name, value in items[:count]]
    if len(items) > count:
        shown.append(f'... {len(items) - count} more')
    return '{' + ','.join(shown) + '}'


@dataclass(frozen=True, kw_only=True)
class RequestRecord:
    """One model request the agent made: what it offered, what it sent back, and what was answered."""

    run_id: str | None
    prompt: str
    instructions: str | None
    system_prompts: tuple[str, ...]
    tools: tuple[ToolDefinition, ...]
    """The function tools offered in this request."""
    output_tools: tuple[ToolDefinition, ...]
    tool_results: tuple[CallRecord, ...]
    """The calls whose results arrived with this request."""
    messages: tuple[ModelMessage, ...] = field(repr=False)
    script: str | None = None
    step: int | None = None
    """The script step played, counting from 1."""
    output_mode: str = 'text'
    """How the agent asked for its output (`'tool'`, `'native'`, `'prompted'`, `'text'`...)."""
    response: ModelResponse | None = field(default=None, repr=False)
    """What the double answered; `None` when it refused (no script, or a drift)."""

    @property
    def tool_names(self) -> list[str]:
        return [tool.name for tool in self.tools]


Expected = str | tuple[str, Mapping[str, Any]]
"""An expected call: a tool name, or a tool name and arguments it was called with."""


class CallLog(list[CallRecord]):
    """The tool calls made, in order, with assertion helpers whose failures name the calls made."""

    def add(self, record: CallRecord) -> None:
        self.append(record)

    def settle(self, part: ToolReturnPart) -> CallRecord | None:
        """Attach a tool return to the call it answers; the call, or `None` when it is not in this log."""
        for record in reversed(self):
            if record.call_id == part.tool_call_id and not record.returned:
                record.returned, record.result, record.outcome = True, part.content, part.outcome
                return record
        return None

    def of(self, tool: str) -> list[CallRecord]:
        return [record for record in self if record.tool == tool]

    def call_count(self, tool: str) -> int:
        return len(self.of(tool))

    def assert_called(
        self,
        tool: str,
        args: Mapping[str, Any] | None = None,
        /,
        *,
        times: int | None = None,
        subset: bool = True,
        trajectory: Sequence[str] | None = None,
    ) -> None:
        """Assert `tool` was called (with `args`), `times` times when given, else at least once.

        Only the arguments in `args` are compared (all with `subset=False`), expected first so `ANY`
        works inside. A failure shows `trajectory` as the actual run (by default, the calls made).
        """
        __tracebackhide__ = True
        check_text('tool', tool)
        check_instance('args', args, Mapping, optional=True, expected='a mapping of argument names to values')
        check_limit('times', times, optional=True, minimum=0)
        matching = [record for record in self if _fits(record, tool, args, subset)]
        shown = bounded_args(args) if args is not None else None
        with_args = f' with {shown}' if shown is not None else ''
        want = f'{tool}({shown or "..."})' + (f' x{times}' if times is not None else '')
        if times is None and not matching:
            raise self._failure(f'tool {tool!r} was not called{with_args}', tool, [want], trajectory)
        if times is not None and len(matching) != times:
            said = f'tool {tool!r} was called {len(matching)} time(s){with_args}, expected {times}'
            raise self._failure(said, tool, [want], trajectory, times=times)

    def assert_not_called(self, tool: str, *, trajectory: Sequence[str] | None = None) -> None:
        __tracebackhide__ = True
        check_text('tool', tool)
        if self.of(tool):
            raise self._failure(f'tool {tool!r} was called, expected no call', tool, [f'no {tool}(...)'], trajectory)

    def assert_order(self, *expected: Expected, subset: bool = True, trajectory: Sequence[str] | None = None) -> None:
        """Assert these calls happened in this order (other calls may come between them); each is a
        tool name, or a `(tool name, arguments)` pair compared as in `assert_called`."""
        __tracebackhide__ = True
        for want in cast('tuple[object, ...]', expected):
            if not _is_expected(want):
                raise refuse('expected', 'a tool name or a (tool name, arguments mapping) pair', want)
        position = 0
        for want in expected:
            tool, args = (want, None) if isinstance(want, str) else want
            while position < len(self) and not _fits(self[position], tool, args, subset):
                position += 1
            if position == len(self):
                described = [_describe_expected(e) for e in expected]
                said = f'calls were not made in the expected order {" then ".join(described)}; '
                said += f'{_describe_expected(want)} is missing after the calls before it'
                listed = [f'{n}. {line}' for n, line in enumerate(described, start=1)]
                raise self._failure(said, tool, listed, trajectory)
            position += 1

    def _failure(
        self, message: str, tool: str, expected: list[str], trajectory: Sequence[str] | None, **details: Any
    ) -> ExpectationError:
        made = [record.describe() for record in self]
        actual = list(trajectory) if trajectory is not None else [f'{n}. {c}' for n, c in enumerate(made, start=1)]
        head = f'{message}; calls made: {_listed(made, _CALLS_CHARS)}\n'
        return ExpectationError(
            head + side_by_side(expected, actual, budget=MAX_MESSAGE_CHARS - len(head)),
            tool=tool,
            calls=made,
            **details,
        )


_CALLS_CHARS = 700  # of a failure's first line, listing the calls made (the table shows them again)


def _listed(made: Sequence[str], limit: int) -> str:
    """The calls made, `; `-separated, as many as fit in `limit` characters, then how many more."""
    shown: list[str] = []
    used = 0
    for index, described in enumerate(made):
        call = clip(described, limit // 2)  # a call of many long arguments leaves room for the others
        if shown and used + len(call) > limit:
            return '; '.join(shown) + f'; ... {len(made) - index} more (below)'
        shown.append(call)
        used += len(call) + 2
    return '; '.join(shown) or 'none'


def side_by_side(
    expected: Sequence[str], actual: Sequence[str], *, width: int = 48, rows: int = 30, budget: int | None = None
) -> str:
    """Two columns, `expected | actual`, of at most `rows` lines (then a count) and `budget` characters."""
    left = [_cell(line, width) for line in expected] or ['(nothing)']
    right = [_cell(line, _ACTUAL_CHARS) for line in actual] or ['(nothing)']
    column = max(len('expected'), *(len(line) for line in left))
    height = max(len(left), len(right))
    lines = [f'  {"expected":<{column}} | actual']
    used = len(lines[0])
    for index, (before, after) in enumerate(itertools.islice(itertools.zip_longest(left, right, fillvalue=''), rows)):
        line = f'  {before:<{column}} | {after}'.rstrip()
        # Room is kept for the closing count, so the table ends within the budget.
        if budget is not None and index and used + len(line) + 40 > budget:
            break
        lines.append(line)
        used += len(line) + 1
    if height > len(lines) - 1:
        lines.append(f'  ... {height - len(lines) + 1} more line(s)')
    return '\n'.join(lines)


_ACTUAL_CHARS = 600  # a guard on one actual line: a call's bounded arguments fit well within it


def _cell(line: str, width: int) -> str:
    return line if len(line) <= width else f'{line[: width - 3]}...'


def _is_expected(want: object) -> bool:
    match want:
        case str() | tuple((str(), Mapping())):
            return True
        case _:
            return False


def _fits(record: CallRecord, tool: str, args: Mapping[str, Any] | None, subset: bool) -> bool:
    # Expected first, so a matcher such as `unittest.mock.ANY` inside it decides equality.
    if record.tool != tool or args is None:
        return record.tool == tool
    if subset:
        return all(name in record.args and value == record.args[name] for name, value in args.items())
    return dict(args) == dict(record.args)


def _describe_expected(expected: Expected) -> str:
    return repr(expected) if isinstance(expected, str) else f'{expected[0]}({bounded_args(expected[1])})'


def _json(value: Any) -> str:
    try:
        return to_json(value, fallback=repr).decode()
    except ValueError:  # nested past pydantic-core's depth limit: a bounded repr instead
        return quote(value)
