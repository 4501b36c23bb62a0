"""Toolsets without their backend: record an MCP server (or any toolset) into a cassette
(`CassetteToolset`), or double it (`ToolsetDouble`)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Self, cast

from pydantic_ai import RunContext
from pydantic_ai.messages import ToolCallPart
from pydantic_ai.models.test import TestModel
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import AbstractToolset, CombinedToolset, ToolsetTool, WrapperToolset
from pydantic_ai.usage import RunUsage
from pydantic_core import SchemaValidator, core_schema, to_jsonable_python

from .._options import check_instance, check_instances, check_label, check_text, refuse
from ..errors import CassetteMismatchError, ConfigurationError, UnrecordedCallError, clip, quote
from ._changes import tool_changes
from ._files import cassette_error, path_detail, place
from ._tool_results import home
from .cassette import Cassette
from .cassette_model import CassetteModel
from .cassette_tools import CassetteTools
from .log import CallLog, CallRecord
from .scrub import scrub as scrub_data

__all__ = ('CassetteToolset', 'ToolsetDouble', 'Answer')

# Arguments are checked against the schema by the model's provider and the tool's owner, not here.
_ANY_ARGS = SchemaValidator(schema=core_schema.dict_schema(core_schema.str_schema(), core_schema.any_schema()))

Answer = Callable[[str, dict[str, Any]], Any]
"""Answers any call: `(tool name, arguments) -> result` (or an awaitable of it)."""


@dataclass(init=False)
class CassetteToolset(WrapperToolset[Any]):
    """Records `wrapped`'s tools and results into `model`'s cassette, or serves them with no server.

    `wrapped` is entered only while `model` records; `name` keys its tools in the cassette (default: its
    `id`, else its label); with `verify`, a replay still lists it and fails when its tools changed.
    """

    model: CassetteModel
    name: str
    verify: bool
    calls: CallLog
    """The tool calls made through it, each with its result as replay gives it."""
    _tools: CassetteTools = field(repr=False)

    def __init__(
        self, wrapped: AbstractToolset[Any], model: CassetteModel, *, name: str | None = None, verify: bool = False
    ) -> None:
        check_instance('wrapped', wrapped, AbstractToolset, expected='a pydantic-ai toolset')
        check_instance('model', model, CassetteModel, expected='the CassetteModel it records with')
        check_text('name', name, optional=True)
        super().__init__(wrapped)
        self.model, self.verify = model, bool(verify)
        self.name = name or wrapped.id or wrapped.label
        self._tools = CassetteTools(model)
        self.calls = self._tools.calls

    @property
    def id(self) -> str | None:
        # The wrapped toolset's: pydantic-ai writes it into each tool definition the model sees.
        return self.wrapped.id

    @property
    def _live(self) -> bool:
        return self.model.records or self.verify

    async def __aenter__(self) -> Self:
        if self._live:
            await self.wrapped.__aenter__()
        return self

    async def __aexit__(self, *args: Any) -> bool | None:
        if self._live:
            return await self.wrapped.__aexit__(*args)
        return None

    async def for_run(self, ctx: RunContext[Any]) -> AbstractToolset[Any]:
        return self if not self._live else await super().for_run(ctx)

    async def for_run_step(self, ctx: RunContext[Any]) -> AbstractToolset[Any]:
        return self if not self._live else await super().for_run_step(ctx)

    async def get_instructions(self, ctx: RunContext[Any]) -> Any:
        return None if not self._live else await super().get_instructions(ctx)

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        __tracebackhide__ = True
        recorded = self.model.cassette.toolsets.get(self.name)
        if not self._live:
            if recorded is None:
                said = f'holds no tools of toolset {self.name!r}; record it with the toolset running'
                advice = self.model.advice.fill()
                raise cassette_error(self.model.path, f'{said} ({advice})', reason='no_toolset', toolset=self.name)
            return {d.name: _offered(self, d) for d in self._definitions(recorded)}
        tools = await self.wrapped.get_tools(ctx)
        listed = [_definition(tool.tool_def) for tool in (await _as_the_agent_sees(tools, ctx)).values()]
        if self.model.scrub:
            listed = cast('list[dict[str, Any]]', scrub_data(listed))
        compared = _as_recorded(listed, recorded) if recorded is not None else listed
        if recorded is not None and compared != recorded and (self.verify or self.model.mode == 'new_episodes'):
            raise self._changed(recorded, compared)
        if self.model.records and compared != recorded:
            self.model.cassette.toolsets[self.name] = listed
            self.model.save()
        return tools

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        __tracebackhide__ = True
        # In replay `tool` is the recorded definition; the wrapped toolset may still hold the function.
        where = home(tool, name) if tool.toolset is not self else (self.wrapped, name)
        call = ToolCallPart(name, tool_args, tool_call_id=ctx.tool_call_id or '')
        return await self._tools.answer(
            ctx, call, tool.tool_def, where, lambda: self.wrapped.call_tool(name, tool_args, ctx, tool)
        )

    def _definitions(self, recorded: list[dict[str, Any]]) -> list[ToolDefinition]:
        __tracebackhide__ = True
        try:
            return [ToolDefinition(**definition) for definition in _with_ids(recorded, self.model.cassette)]
        except TypeError as error:  # a field this pydantic-ai does not know, or a name missing
            said = f'holds a tool of toolset {self.name!r} pydantic-ai cannot read: {clip(str(error))}'
            raise cassette_error(self.model.path, said, reason='invalid') from None

    def _changed(self, recorded: list[dict[str, Any]], listed: list[dict[str, Any]]) -> CassetteMismatchError:
        changes = tool_changes('tool', recorded, listed, new='listed')
        lines = '\n'.join(f'  - {line}' for line in changes)
        return CassetteMismatchError(
            f'cassette {place(self.model.path)}: the tools of toolset {self.name!r} changed since they were recorded:\n'
            f'{lines}\nRe-record with {self.model.advice.rerecord(keep=False)} if the change is intended.',
            path=path_detail(self.model.path),
            fingerprint='',
            changes=changes,
            toolset=self.name,
        )


@dataclass(init=False)
class ToolsetDouble(AbstractToolset[Any]):
    """A toolset with no backend: given tools, scripted answers, and a log of the calls made.

    `tools` are `ToolDefinition`s or tool names mapped to argument JSON schemas; `answers` gives a tool's
    result (or a function of its arguments, sync or async); `answer`, a function `(tool name, arguments)`
    or a toolset, answers the rest, else an `UnrecordedCallError`. `id` is for durable execution.
    """

    definitions: tuple[ToolDefinition, ...]
    answers: Mapping[str, Any]
    answer: Answer | AbstractToolset[Any] | None
    calls: CallLog
    _id: str | None = field(repr=False)

    def __init__(
        self,
        tools: Sequence[ToolDefinition] | Mapping[str, Mapping[str, Any]],
        *,
        answers: Mapping[str, Any] | None = None,
        answer: Answer | AbstractToolset[Any] | None = None,
        id: str | None = None,
    ) -> None:
        expected = 'ToolDefinitions or a name-to-schema mapping'
        if not isinstance(cast(object, tools), Mapping | Sequence) or isinstance(cast(object, tools), str | bytes):
            raise refuse('tools', expected, tools, what='ToolsetDouble tools')
        if isinstance(tools, Mapping):
            for name, schema in cast('Mapping[object, object]', tools).items():
                check_text('tools', name)
                check_instance('tools', schema, Mapping, expected=f'a JSON schema (a dict) for tool {quote(name)}')
            definitions = tuple(
                ToolDefinition(name=name, parameters_json_schema=dict(schema)) for name, schema in tools.items()
            )
        else:
            definitions = tuple(check_instances('tools', tools, ToolDefinition))
        for definition in definitions:  # a name a listing or a log could not show is refused, as everywhere
            check_label('tools', definition.name, what='a tool name')
        names = {d.name for d in definitions}
        if unknown := [name for name in answers or {} if name not in names]:
            raise ConfigurationError(
                f'ToolsetDouble answers tool {unknown[0]!r}, which it does not offer '
                f'(tools: {", ".join(sorted(names))})',
                option='answers',
            )
        if answer is not None and not (callable(answer) or isinstance(cast(object, answer), AbstractToolset)):
            raise refuse('answer', 'a function or a toolset', answer)
        self.definitions = definitions
        self.answers = dict(answers or {})
        self.answer = answer
        self.calls = CallLog()
        self._id = id

    @classmethod
    async def from_toolset(
        cls,
        toolset: AbstractToolset[Any],
        *,
        answers: Mapping[str, Any] | None = None,
        answer: Answer | AbstractToolset[Any] | None = None,
    ) -> ToolsetDouble:
        """A double offering exactly the tools `toolset` offers now (it is entered to list them)."""
        ctx = RunContext[Any](deps=None, model=TestModel(), usage=RunUsage())
        async with toolset:
            tools = await toolset.get_tools(ctx)
        return cls([tool.tool_def for tool in tools.values()], answers=answers, answer=answer, id=toolset.id)

    @property
    def id(self) -> str | None:
        return self._id

    @property
    def label(self) -> str:
        return f'ToolsetDouble({", ".join(d.name for d in self.definitions)})'

    @property
    def _answering(self) -> AbstractToolset[Any] | None:
        answer = cast(object, self.answer)
        return cast('AbstractToolset[Any]', answer) if isinstance(answer, AbstractToolset) else None

    async def __aenter__(self) -> Self:
        if self._answering is not None:
            await self._answering.__aenter__()
        return self

    async def __aexit__(self, *args: Any) -> bool | None:
        if self._answering is not None:
            return await self._answering.__aexit__(*args)
        return None

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        return {d.name: _offered(self, d) for d in self.definitions}

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        __tracebackhide__ = True
        if name in self.answers:
            scripted = self.answers[name]
            result = scripted(tool_args) if callable(scripted) else scripted
        elif (answering := self._answering) is not None:
            result = await _forward(answering, name, tool_args, ctx)
        elif self.answer is not None:
            result = cast(Answer, self.answer)(name, tool_args)
        else:
            raise UnrecordedCallError(
                f'ToolsetDouble has no answer for tool {name!r}; give one in answers= or answer=',
                tool=name,
                args=quote(tool_args),
                recorded=sorted(self.answers),
            )
        if inspect.isawaitable(result):
            result = await result
        self.calls.add(CallRecord(tool=name, args=tool_args, call_id='', returned=True, result=result))
        return result


def _offered(toolset: AbstractToolset[Any], definition: ToolDefinition) -> ToolsetTool[Any]:
    return ToolsetTool(toolset=toolset, tool_def=definition, max_retries=1, args_validator=_ANY_ARGS)


async def _forward(toolset: AbstractToolset[Any], name: str, args: dict[str, Any], ctx: RunContext[Any]) -> Any:
    __tracebackhide__ = True
    tool = (await toolset.get_tools(ctx)).get(name)
    if tool is None:
        raise UnrecordedCallError(
            f'ToolsetDouble: its answering toolset {toolset.label} has no tool {name!r}',
            tool=name,
            args=quote(args),
            recorded=[],
        )
    return await toolset.call_tool(name, tool.args_validator.validate_python(args), ctx, tool)


@dataclass
class _Listed(AbstractToolset[Any]):
    """Tools already listed, for pydantic-ai's `CombinedToolset` to stamp as an agent's toolsets do."""

    tools: dict[str, ToolsetTool[Any]]

    @property
    def id(self) -> str | None:
        return None

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        return self.tools

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:  # pragma: no cover - only listed, never called
        raise NotImplementedError


async def _as_the_agent_sees(tools: dict[str, ToolsetTool[Any]], ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
    """`tools` with the `toolset_id` the agent stamps on them, as recorded whatever stands in."""
    return await CombinedToolset([_Listed(tools)]).get_tools(ctx)


def _with_ids(recorded: list[dict[str, Any]], cassette: Cassette) -> list[dict[str, Any]]:
    """`recorded` with the `toolset_id`s the requests show, for older cassettes that lack them."""
    if all('toolset_id' in definition for definition in recorded):
        return recorded
    seen: dict[str, str] = {}
    for exchange in cassette.exchanges:
        parameters: object = exchange.request.get('parameters')
        tools: object = (
            cast('dict[str, Any]', parameters).get('function_tools') if isinstance(parameters, dict) else None
        )
        for item in cast('list[object]', tools) if isinstance(tools, list) else []:
            tool = cast('dict[str, object]', item) if isinstance(item, dict) else {}
            name, toolset_id = tool.get('name'), tool.get('toolset_id')
            if isinstance(name, str) and isinstance(toolset_id, str):
                seen.setdefault(name, toolset_id)
    return [
        {**d, 'toolset_id': seen[d['name']]} if 'toolset_id' not in d and d.get('name') in seen else d for d in recorded
    ]


def _as_recorded(listed: list[dict[str, Any]], recorded: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`listed` without toolset ids, where the cassette was recorded before they were kept."""
    if any('toolset_id' in definition for definition in recorded):
        return listed
    return [{key: value for key, value in d.items() if key != 'toolset_id'} for d in listed]


def _definition(definition: ToolDefinition) -> dict[str, Any]:
    """A tool definition as the cassette keeps it: its non-empty fields."""
    data = cast('dict[str, Any]', to_jsonable_python(definition, fallback=repr))
    return {key: value for key, value in data.items() if value not in (None, {}, [])}
