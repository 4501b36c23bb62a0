"""The injector: registration and scoping, faithful serialisation, and `call` being `run(...).output`;
the `RunContext` a tool gets on the direct path (`injector.call`) behaves like one built normally.
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import gc
import json
import sys
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path, PurePosixPath
from types import FrameType
from typing import Any, Literal
from uuid import UUID

import pytest
from opentelemetry.sdk.trace import TracerProvider
from pydantic import BaseModel, Field, Json, Secret, SecretBytes, SecretStr
from pydantic_ai import Agent, AgentRunResult, ModelRetry, RunContext
from pydantic_ai.models.test import TestModel
from pydantic_ai.usage import RunUsage

from agentool import (
    AgenToolCapability,
    AgenToolError,
    AgenToolNotFoundError,
    BaseOperationInput,
    DuplicateNameError,
    InputValidationError,
    InvalidInputError,
    InvalidJSONError,
    NotAnObjectError,
    OutputError,
    RoutingConfig,
    ToolRetryError,
    TransformError,
    create_agentool,
    use_registry,
)
from agentool._compat import PYDANTIC_AI_VERSION
from agentool.core.injector import AgenToolInjector, get_injector, use_injector
from agentool.errors import DependencyError
from tests.agentools import RICH, Rich, RichInput, make_rich, rich_echo


class Color(enum.Enum):
    RED = 'red'
    BLUE = 'blue'


class Point(BaseModel):
    x: int
    y: int


class Echoed(BaseModel):
    when: datetime
    day: date
    amount: Decimal
    ident: UUID
    color: Color
    path: PurePosixPath
    tags: set[str]
    point: Point
    extra: dict[str, Any] = Field(default_factory=dict[str, Any])


class EchoInput(BaseOperationInput, Echoed):
    """The fields `echo` answers with, and the operation."""

    operation: Literal['echo']


async def echo(
    when: datetime,
    day: date,
    amount: Decimal,
    ident: UUID,
    color: Color,
    path: PurePosixPath,
    tags: set[str],
    point: Point,
    extra: dict[str, Any] | None = None,
) -> Echoed:
    return Echoed.model_validate(locals() | {'extra': extra or {}})  # every argument, as it arrived


def create_echo() -> None:
    create_agentool('echo', EchoInput, RoutingConfig(operation_map={'echo': 'echo'}), [echo])


class CalcInput(BaseOperationInput):
    operation: Literal['add', 'div', 'retry', 'bad_output', 'bad_transform']
    a: float = 0
    b: float = 0


async def add(a: float, b: float) -> float:
    return a + b


async def div(ctx: RunContext[Any], a: float, b: float) -> float:
    return a / b


async def retry(a: float) -> float:
    raise ModelRetry(f'cannot handle {a}')


async def bad_output() -> float:
    return 'not a number'  # type: ignore[return-value]  # pyright: ignore[reportReturnType]


def create_calc() -> None:
    routes: dict[str, Any] = {name: name for name in ('add', 'retry', 'bad_output')}
    routes |= {'div': ('div', lambda x: {'a': x.a, 'b': x.b}), 'bad_transform': ('add', lambda x: {'a': x.a})}
    create_agentool('calc', CalcInput, RoutingConfig(operation_map=routes), [add, div, retry, bad_output])


class NoteInput(BaseOperationInput):
    operation: Literal['note']
    text: str


async def note(text: str) -> dict[str, Any]:
    return {'text': text, 'length': len(text)}


# --- registration and scoping -----------------------------------------------------------------


def test_create_agentool_registers_with_the_injector_in_effect(injector: AgenToolInjector) -> None:
    create_calc()
    assert 'calc' in injector
    assert injector.list_names() == ['calc']
    assert injector.get('calc').name == 'calc'


def test_each_registry_comes_with_its_own_default_injector() -> None:
    outer = get_injector()
    with use_registry():
        inner = get_injector()
        create_calc()
        assert 'calc' in inner
        assert get_injector() is inner
    assert inner is not outer
    assert 'calc' not in outer


def test_a_scoped_registry_and_its_injector_are_collected_together() -> None:
    with use_registry() as scoped:
        create_calc()
        assert 'calc' in get_injector()
    gone = weakref.ref(scoped)
    del scoped
    gc.collect()
    assert gone() is None


async def test_use_injector_is_task_local() -> None:
    seen: dict[str, AgenToolInjector] = {}

    async def task(label: str) -> None:
        with use_injector() as mine:
            await asyncio.sleep(0)
            seen[label] = get_injector()
            assert get_injector() is mine

    await asyncio.gather(task('a'), task('b'))
    assert seen['a'] is not seen['b']


def test_register_refuses_a_taken_name_unless_replace(injector: AgenToolInjector) -> None:
    plain = Agent(TestModel())
    injector.register('plain', plain)
    with pytest.raises(DuplicateNameError) as caught:
        injector.register('plain', plain)
    assert caught.value.details['agentool'] == 'plain'
    injector.register('plain', plain, replace=True)


def test_dependency_on_a_registered_non_agentool_fails_at_creation(injector: AgenToolInjector) -> None:
    injector.register('llm', Agent(TestModel()))
    with pytest.raises(DependencyError) as caught:
        create_agentool('user', NoteInput, RoutingConfig(operation_map={'note': 'note'}), [note], dependencies=['llm'])
    assert caught.value.details == {'agentool': 'user', 'dependency': 'llm'}
    assert 'user' not in injector


def test_registering_a_non_agentool_under_a_declared_dependency_fails(injector: AgenToolInjector) -> None:
    create_agentool('user', NoteInput, RoutingConfig(operation_map={'note': 'note'}), [note], dependencies=['helper'])
    with pytest.raises(DependencyError, match="'helper'"):
        injector.register('helper', Agent(TestModel()))


def test_clear_forgets_everything(injector: AgenToolInjector) -> None:
    create_calc()
    injector.clear()
    assert injector.list_names() == []


# --- serialisation --------------------------------------------------------------------------------

_WHEN = datetime(2024, 5, 17, 13, 45, 7, 123456, tzinfo=UTC)
_ECHO: dict[str, Any] = {
    'operation': 'echo',
    'when': _WHEN,
    'day': date(2024, 2, 29),
    'amount': Decimal('12345678901234567890.000000001'),
    'ident': UUID('12345678-1234-5678-1234-567812345678'),
    'color': Color.BLUE,
    'path': PurePosixPath('/tmp/a b/c.txt'),
    'tags': {'x', 'y'},
    'point': Point(x=1, y=2),
    'extra': {'at': _WHEN, 'ids': (1, 2)},
}


@pytest.mark.parametrize('how', ['run', 'call'])
async def test_every_serialisable_type_arrives_faithfully(injector: AgenToolInjector, how: str) -> None:
    create_echo()
    if how == 'run':
        output = (await injector.run('echo', _ECHO)).output
    else:
        output = await injector.call('echo', _ECHO)
    # Each value as given (the Decimal not rounded through a float); but an untyped value inside a
    # dict travels as JSON: ISO text, not Python's repr.
    given = {key: value for key, value in _ECHO.items() if key != 'operation'}
    assert output == Echoed.model_validate(given | {'extra': {'at': '2024-05-17T13:45:07.123456Z', 'ids': [1, 2]}})
    assert output.color is Color.BLUE


@dataclass
class DataclassInput:
    operation: str
    a: Decimal
    b: float


async def test_any_value_pydantic_serialises_is_accepted(injector: AgenToolInjector, tmp_path: Path) -> None:
    create_calc()
    assert await injector.call('calc', DataclassInput('add', Decimal('1.5'), 2)) == 3.5
    create_agentool('where', PathInput, RoutingConfig(operation_map={'where': 'where'}), [where])
    assert await injector.call('where', {'operation': 'where', 'path': tmp_path}) == tmp_path.name


class PathInput(BaseOperationInput):
    operation: Literal['where']
    path: Path


async def where(path: Path) -> str:
    return path.name


async def test_unserialisable_input_is_a_typed_error(injector: AgenToolInjector) -> None:
    create_calc()
    for how in (injector.run, injector.call):
        with pytest.raises(InvalidInputError) as caught:
            await how('calc', {'operation': 'add', 'a': object()})
        assert caught.value.details['agentool'] == 'calc'


async def test_bytes_are_json_text_and_bad_utf8_is_a_typed_error(injector: AgenToolInjector) -> None:
    create_calc()
    assert await injector.call('calc', b'{"operation": "add", "a": 1, "b": 2}') == 3.0
    with pytest.raises(InvalidJSONError) as caught:
        await injector.run('calc', b'{"operation": "\xff"}')
    assert caught.value.details['position'] == 15


async def test_run_returns_the_pydantic_ai_run_result(injector: AgenToolInjector) -> None:
    create_calc()
    result = await injector.run('calc', {'operation': 'add', 'a': 1, 'b': 2})
    assert isinstance(result, AgentRunResult)
    assert result.output == 3.0
    assert result.usage.tool_calls == 1


# --- the direct path is run(...).output ---------------------------------------------------------

_SAME: list[Any] = [
    {'operation': 'add', 'a': 1.5, 'b': 2},
    {'operation': 'div', 'a': 1, 'b': 4},
    '{"operation": "add", "a": "3", "b": 4}',
    CalcInput(operation='add', a=2, b=2),
    {'operation': 'add', 'a': Decimal('0.25'), 'b': 1},
]

_FAILING: list[tuple[Any, type[Exception]]] = [  # bad input, refused alike everywhere: tests/test_hostile_input.py
    ({'operation': 'div', 'a': 1, 'b': 0}, ZeroDivisionError),
    ({'operation': 'retry', 'a': 7}, ToolRetryError),
    ({'operation': 'bad_output'}, OutputError),
    ({'operation': 'bad_transform', 'a': 1}, AgenToolError),
]


@pytest.mark.parametrize('given', _SAME)
async def test_call_equals_run_output(injector: AgenToolInjector, given: Any) -> None:
    create_calc()
    expected = (await injector.run('calc', given)).output
    output = await injector.call('calc', given)
    assert output == expected
    assert type(output) is type(expected)


@pytest.mark.parametrize(('given', 'error'), _FAILING)
async def test_call_raises_what_run_raises(injector: AgenToolInjector, given: Any, error: type[Exception]) -> None:
    create_calc()
    with pytest.raises(error) as from_run:
        await injector.run('calc', given)
    with pytest.raises(error) as from_call:
        await injector.call('calc', given)
    assert type(from_call.value) is type(from_run.value)
    if isinstance(from_run.value, AgenToolError):
        assert isinstance(from_call.value, AgenToolError)
        assert from_call.value.details == from_run.value.details
        assert from_call.value.message == from_run.value.message


def explode(input: Any) -> dict[str, Any]:
    return {'a': 1 / 0}


async def test_a_transform_problem_is_typed_on_both_paths(injector: AgenToolInjector) -> None:
    operations = ('add', 'div', 'retry', 'bad_output', 'bad_transform')
    routing = RoutingConfig(operation_map=dict.fromkeys(operations, ('add', explode)))
    create_agentool('broken', CalcInput, routing, [add])
    for how in (injector.run, injector.call):
        with pytest.raises(TransformError) as caught:
            await how('broken', {'operation': 'div'})
        assert caught.value.details['operation'] == 'div'


async def untyped_note(text: str) -> Any:
    return {'text': text, 'length': len(text)}


async def test_untyped_agentool_output_is_json_text_on_both_paths(injector: AgenToolInjector) -> None:
    create_agentool('notes', NoteInput, RoutingConfig(operation_map={'note': 'untyped_note'}), [untyped_note])
    given = {'operation': 'note', 'text': 'hé'}
    expected = (await injector.run('notes', given)).output
    assert isinstance(expected, str)
    assert await injector.call('notes', given) == expected
    assert json.loads(expected) == {'text': 'hé', 'length': 2}


async def test_call_on_a_plain_agent_runs_it(injector: AgenToolInjector) -> None:
    injector.register('llm', Agent(TestModel(custom_output_text='hello')))
    assert await injector.call('llm', 'say hi') == 'hello'


async def test_run_of_a_plain_agent_gets_its_deps_from_the_wiring(injector: AgenToolInjector) -> None:
    @dataclass
    class Settings:
        greeting: str = 'hi'

    agent = Agent(TestModel(), deps_type=Settings, output_type=str)

    @agent.tool
    def greet(ctx: RunContext[Any]) -> str:
        return ctx.deps.greeting

    injector.register('llm', agent)
    assert (await injector.run('llm', 'say hi')).output == '{"greet":"hi"}'


# --- other forms of agentool agents, and the injector running a tool ----------------------------


async def test_model_string_and_capability_agents_are_agentools(injector: AgenToolInjector) -> None:
    create_calc()
    given = {'operation': 'add', 'a': 1, 'b': 2}
    injector.register('typed', Agent('agentool:calc', output_type=float))
    injector.register('text', Agent('agentool:calc'))
    explicit = Agent('agentool:calc', capabilities=[AgenToolCapability('calc')], output_type=float)
    injector.register('explicit', explicit)
    for name in ('typed', 'text', 'explicit'):
        assert await injector.call(name, given) == (await injector.run(name, given)).output
    assert await injector.call('text', given) == '3.0'
    assert await injector.call('explicit', given) == 3.0


async def relay_note(text: str) -> Any:
    return await get_injector().call('notes', {'operation': 'note', 'text': text})


async def test_tools_see_the_injector_running_them(injector: AgenToolInjector) -> None:
    create_agentool('notes', NoteInput, RoutingConfig(operation_map={'note': 'untyped_note'}), [untyped_note])
    routing = RoutingConfig(operation_map={'note': 'relay_note'})
    create_agentool('relay', NoteInput, routing, [relay_note], dependencies=['notes'])
    other = AgenToolInjector()  # not in effect: only running the tool makes it so
    other.register('relay', injector.get('relay'))
    other.register('notes', injector.get('notes'))
    with other.override(notes=lambda input: {'text': 'from other'}):
        assert await other.call('relay', {'operation': 'note', 'text': 'x'}) == '{"text":"from other"}'
    assert get_injector() is injector


def test_unregister_forgets_one_name(injector: AgenToolInjector) -> None:
    create_calc()
    injector.unregister('calc')
    assert 'calc' not in injector
    with pytest.raises(AgenToolNotFoundError):
        injector.unregister('calc')


class _SecretInput(BaseOperationInput):
    operation: Literal['use']
    token: SecretStr
    pin: Secret[int]
    raw: SecretBytes
    numbers: Json[list[int]]


async def _use_secret(token: SecretStr, pin: Secret[int], raw: SecretBytes, numbers: list[int]) -> str:
    return f'{token.get_secret_value()} {pin.get_secret_value()} {raw.get_secret_value().decode()} {numbers}'


async def test_a_model_input_reaches_the_tool_with_its_secrets_and_json_fields_as_given() -> None:
    # pydantic writes every secret as '**********' in JSON: the model given must not reach the tool so.
    with use_registry(), use_injector() as injector:
        create_agentool('vault', _SecretInput, RoutingConfig(operation_map={'use': '_use_secret'}), [_use_secret])
        given = _SecretInput.model_validate(
            {'operation': 'use', 'token': 's3cret', 'pin': 1234, 'raw': b'raw', 'numbers': '[1, 2]'}
        )
        assert await injector.call('vault', given) == 's3cret 1234 raw [1, 2]'
        assert (await injector.run('vault', given)).output == 's3cret 1234 raw [1, 2]'


@pytest.mark.parametrize('kind', ['dict', 'model', 'json', 'bytes'])
async def test_every_input_kind_reaches_the_tool_faithfully_on_call_and_run(
    injector: AgenToolInjector, kind: str
) -> None:
    make_rich()
    as_dict: dict[str, Any] = {'operation': 'echo', **RICH}
    model = RichInput(**as_dict)
    text = model.model_dump_json(exclude_unset=True)
    input: Any = {'dict': as_dict, 'model': model, 'json': text, 'bytes': text.encode()}[kind]
    expected = Rich(**RICH)
    assert await injector.call('rich', input) == expected
    assert (await injector.run('rich', input)).output == expected
    assert await injector.handle('rich')(input) == expected


@pytest.mark.parametrize(
    ('input', 'error'),
    [
        (None, NotAnObjectError),
        (3, NotAnObjectError),
        ([], NotAnObjectError),
        (b'\xff', InvalidJSONError),
        (object(), InvalidInputError),
        ({'operation': 'echo', 'x': object()}, InvalidInputError),
    ],
)  # inputs no JSON text is; JSON text and dicts on every surface: tests/test_hostile_input.py
async def test_call_and_run_raise_the_same_typed_error(injector: AgenToolInjector, input: Any, error: type) -> None:
    make_rich()
    with pytest.raises(error) as by_call:
        await injector.call('rich', input)
    with pytest.raises(error) as by_run:
        await injector.run('rich', input)
    assert str(by_call.value) == str(by_run.value)
    assert by_call.value.details == by_run.value.details


@pytest.mark.parametrize('name', ['rihc', 3, None, ['rich']])
async def test_an_unknown_name_is_not_found_on_call_run_get_and_override(injector: AgenToolInjector, name: Any) -> None:
    make_rich()
    for attempt in (
        lambda: injector.call(name, {}),
        lambda: injector.run(name, {}),
    ):
        with pytest.raises(AgenToolNotFoundError) as caught:
            await attempt()
        assert isinstance(name, str) or 'agent names are strings' in str(caught.value)
        if name == 'rihc':
            assert caught.value.details['suggestions'] == ['rich']
            assert "did you mean 'rich'?" in str(caught.value)
    with pytest.raises(AgenToolNotFoundError) as caught:
        injector.get(name)
    assert isinstance(name, str) or 'agent names are strings' in str(caught.value)
    assert name != 'rihc' or caught.value.details['suggestions'] == ['rich']
    if isinstance(name, str):
        with pytest.raises(AgenToolNotFoundError), injector.override(**{name: 1}):
            pass


async def test_a_model_input_sends_only_the_fields_its_caller_set(injector: AgenToolInjector) -> None:
    # `unused` left at its default is not sent, so the operation does not refuse it as given.
    make_rich()
    routing = RoutingConfig(operation_map={'echo': 'rich_echo', 'other': 'rich_echo'})
    create_agentool('strict', RichInput, routing, [rich_echo])
    model = RichInput(operation='echo', **RICH)
    assert await injector.call('rich', model) == Rich(**RICH)
    with pytest.raises(InputValidationError) as caught:
        await injector.call('rich', RichInput(operation='echo', unused=1, **RICH))
    assert [e['loc'] for e in caught.value.errors] == [['unused']]


def _entered_modules(events: list[str]) -> Callable[[FrameType, str, object], None]:
    """A profiler appending each agentool module a call enters (not already on the stack: re-entry repeats it)."""
    stack: list[str] = []

    def profile(frame: FrameType, event: str, _arg: object) -> None:
        if event == 'call':
            module = str(frame.f_globals.get('__name__', ''))
            if module.startswith('agentool') and module not in stack:
                events.append(module)
            stack.append(module)
        elif event == 'return' and stack:
            stack.pop()

    return profile


class OffsetInput(BaseOperationInput):
    operation: Literal['plain', 'reads']


@dataclass
class Offset:
    by: int = 1


async def offset_tool(ctx: RunContext[Offset]) -> int:
    sys.setprofile(None)  # the path to the tool ends here
    return ctx.deps.by


async def offset_plain_tool() -> int:
    sys.setprofile(None)
    return 0


@pytest.mark.parametrize('traced', [False, True], ids=['untraced', 'traced'])
async def test_a_direct_call_enters_each_agentool_module_once_on_its_way_to_the_tool(
    injector: AgenToolInjector, traced: bool, provider: TracerProvider
) -> None:
    # The story of a call (docs/architecture.md): the injector decides the deps, builds the
    # context and hands the input to the manager, which starts the tool; no module is left and
    # entered again (deciding whether the tool reads deps, or naming the span, does not ask the
    # manager first).
    injector.tracer_provider = provider if traced else None
    routing = RoutingConfig(operation_map={'plain': 'offset_plain_tool', 'reads': 'offset_tool'})
    create_agentool('offset', OffsetInput, routing, [offset_plain_tool, offset_tool], deps_type=Offset)
    assert await injector.call('offset', {'operation': 'reads'}) == 1  # deps kept from here on
    for operation, expected in (('reads', 1), ('plain', 0)):
        entered: list[str] = []
        sys.setprofile(_entered_modules(entered))
        try:
            result = await injector.call('offset', {'operation': operation})
        finally:
            sys.setprofile(None)
        assert result == expected
        assert entered[0].startswith('agentool.core.injector')
        assert 'agentool.core.manager' in entered
        # The span's argument checks (`agentool._options`, a leaf that calls nothing back) may run twice.
        assert [m for m in entered if entered.count(m) > 1 and m != 'agentool._options'] == [], entered


class PeekInput(BaseOperationInput):
    operation: Literal['peek']


seen: list[RunContext[Any]] = []


async def peek(ctx: RunContext[Any]) -> str:
    seen.append(ctx)
    return 'seen'


async def test_the_direct_context_is_a_run_context_of_its_own_per_call() -> None:
    agent = create_agentool('peek', PeekInput, RoutingConfig(operation_map={'peek': 'peek'}), [peek])
    seen.clear()
    await get_injector().call('peek', '{"operation": "peek"}', deps='one')
    first = seen[-1]
    assert isinstance(first, RunContext)
    assert (first.deps, first.prompt) == ('one', '{"operation": "peek"}')
    assert (first.agent, first.tool_name) == (agent, '__agentool_manager__')
    assert first.model is agent.model
    assert first.usage == RunUsage()
    assert (first.retry, first.messages, first.run_step) == (0, [], 0)
    assert repr(first).startswith('RunContext(deps=')
    # Mutating one context (as a tool may) changes no other, and not the next call's.
    first.model = 'changed'  # type: ignore[assignment]
    first.usage.requests = 3
    await get_injector().call('peek', '{"operation": "peek"}', deps='two')
    second = seen[-1]
    assert second is not first
    assert second.model is agent.model
    assert second.usage == RunUsage()
    assert second.deps == 'two'
    # `dataclasses.replace` (what pydantic-ai and tools use to derive a context) keeps every field.
    derived = dataclasses.replace(second, deps='three')
    assert isinstance(derived, RunContext)
    assert (derived.deps, derived.model) == ('three', agent.model)
    assert (derived.agent, derived.prompt) == (agent, second.prompt)


def test_canary_run_context_fields_the_direct_and_lean_paths_set() -> None:
    # agentool's direct path (agentool/core/request/_context.py) and lean runs (agentool/core/agent/lean.py) build a
    # `RunContext` from its dataclass fields; a rename in pydantic-ai would leave a tool reading a default.
    try:
        names = {field.name for field in dataclasses.fields(RunContext)}
    except TypeError as error:
        pytest.fail(f'pydantic-ai {PYDANTIC_AI_VERSION}: RunContext is no longer a dataclass: {error}')
    needed = {'deps', 'model', 'prompt', 'agent', 'tool_name', 'usage', 'run_id', 'conversation_id'}
    needed |= {'tool_call_id', 'messages', 'run_step', 'max_retries'}
    missing = needed - names
    assert not missing, f'pydantic-ai {PYDANTIC_AI_VERSION}: RunContext lost the fields {sorted(missing)}'
