"""A cassette's tool results, looked up by tool name and canonical arguments (`CassetteTools`, `CassetteToolset`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import TypeAdapter
from pydantic_ai.messages import ToolCallPart

from ..errors import CassetteError, UnrecordedCallError
from ._tool_results import Home, Returns, replayed_result
from .cassette import RecordedToolCall, canonical_args
from .log import CallLog, CallRecord

__all__ = ('Served', 'ToolAnswers', 'answered')


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
        self.hint = hint
        """What to do about a call not recorded (how to record it, where the user is)."""
        # Sent arguments are looked up as they were written (scrubbed, redacted), like the records.
        self._clean = clean
        self._results: dict[tuple[str, str], list[RecordedToolCall]] = {}
        self._served: Counter[tuple[str, str]] = Counter()
        self.returns = Returns()
        """The tools' return annotations, which rebuild what JSON cannot (models, dataclasses)."""
        for call in calls:
            self.add(call)

    def add(self, call: RecordedToolCall) -> None:
        self._results.setdefault((call.tool, canonical_args(call.args)), []).append(call)

    def answer(self, tool: str, args: dict[str, Any], where: Home) -> Served | None:
        """The next recorded result of this call as the tool returned it; `None` when none was recorded.

        Raises:
            CassetteError: the result was rebuilt through the tool's return annotation when
                recorded, and that annotation is gone or no longer fits it.
        """
        __tracebackhide__ = True  # cassette errors point at the test, not here
        key = (tool, canonical_args(args if self._clean is None else self._clean(tool, args)))
        results = self._results.get(key)
        if not results:
            return None
        recorded = results[min(self._served[key], len(results) - 1)]
        self._served[key] += 1
        returns = self.returns.of(where) if recorded.annotated else None
        value, problem = replayed_result(recorded.result, recorded.types, recorded.annotated, returns)
        if problem is not None:
            raise CassetteError(
                f'{self.source}: the recorded result of tool {tool!r} was rebuilt through its return '
                f'annotation, but {problem}{f"; {self.hint}" if self.hint else ""}',
                path=self.path,
                reason='result',
                tool=tool,
            )
        return Served(value)

    def serve(self, call: ToolCallPart, run_id: str | None, log: CallLog, where: Home) -> Served | None:
        """The next recorded result of `call`, noted in `log`; `None` when none was recorded (see `answer`)."""
        __tracebackhide__ = True  # cassette errors point at the test, not here
        sent = call.args_as_dict()
        served = self.answer(call.tool_name, sent, where)
        if served is not None:
            log.add(answered(call.tool_name, sent, call.tool_call_id, run_id, served.value))
        return served

    def typed(self, recorded: RecordedToolCall, returns: TypeAdapter[Any] | None) -> Any:
        """What a replay of `recorded` gives (for a log kept while recording, to read as on replay)."""
        return replayed_result(recorded.result, recorded.types, recorded.annotated, returns)[0]

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
    """The log's record of a call that returned `result`."""
    return CallRecord(
        tool=tool, args=args, call_id=call_id or '', run_id=run_id, returned=True, result=result, outcome='success'
    )
