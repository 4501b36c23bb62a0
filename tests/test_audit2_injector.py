"""Second-pass audit of the injector, the LLM toolset and the MCP server: held-out tests from the docs.

Each test goes through the public API only (`injector.run/call`, handles, `AgenToolToolset`,
`create_mcp_server`) and checks a claim of `docs/concepts/injector.md`, `docs/guides/llm-toolset.md`
or `docs/guides/mcp.md`, or an edge the library's standard covers (typed errors, never a foreign one).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from enum import Enum
from functools import partial
from pathlib import PurePosixPath
from typing import Any, Literal, cast
from uuid import UUID

import pytest
from mcp import Client, MCPError
from mcp.types import INVALID_PARAMS
from pydantic import BaseModel, Field
from pydantic_ai import Agent, RunContext
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agentool import AgenToolAgent, BaseOperationInput, Route, RoutingConfig, create_agentool, is_exposed
from agentool.core.handle import AgenToolHandle, Uses
from agentool.core.injector import AgenToolInjector, get_injector, use_injector
from agentool.errors import (
    AgenToolNotFoundError,
    ConfigurationError,
    DependencyCycleError,
    DepsUnavailableError,
    InputTooLargeError,
    InputValidationError,
    InvalidInputError,
    InvalidJSONError,
    MissingDepsError,
    NotAnObjectError,
    OutputError,
    ServingError,
    UnknownOperationError,
)
from agentool.mcp import create_mcp_server, serve
from agentool.toolset import AgenToolToolset
from tests._lean_diff import differential
from tests.agentools import PingInput

# --- a small system: a greeter reading a resource and calling a kv agentool through a handle ------

MADE: list[str] = []


class Greeting:
    """A resource: provided by type, made once per run, closed when the run ends."""

    def __init__(self) -> None:
        self.word = 'hello'
        MADE.append('make')

    def close(self) -> None:
        MADE.append('close')


@dataclass
class GreeterDeps:
    kv: AgenToolHandle[str | None]
    greeting: Greeting


class KVInput(BaseOperationInput):
    operation: Literal['get']
    key: str


class GreetInput(BaseOperationInput):
    operation: Literal['greet']
    user: str


async def kv_get(key: str) -> str | None:
    """Read a value."""
    return {'u1': 'Ada'}.get(key)


async def greet(ctx: RunContext[GreeterDeps], user: str) -> str:
    """Greet a user by their stored name."""
    name = await ctx.deps.kv({'operation': 'get', 'key': user})
    return f'{ctx.deps.greeting.word} {name or user}'


def make_greeter(*, provide: bool = True) -> None:
    MADE.clear()
    create_agentool('kv', KVInput, RoutingConfig(operation_map={'get': 'kv_get'}), [kv_get])
    create_agentool(
        'greeter',
        GreetInput,
        RoutingConfig(operation_map={'greet': 'greet'}),
        [greet],
        deps_type=GreeterDeps,
        dependencies=['kv'],
    )
    if provide:
        get_injector().provide(Greeting, Greeting)


def call_then_answer(tool: str, args: dict[str, Any]) -> FunctionModel:
    """A model calling `tool` once, then answering with what it returned."""

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returned = [p for p in messages[-1].parts if isinstance(p, ToolReturnPart)]
        if not returned:
            return ModelResponse(parts=[ToolCallPart(tool, args)])
        return ModelResponse(parts=[TextPart(str(returned[0].content))])

    return FunctionModel(model)


# --- deps on every surface: the LLM toolset too ---------------------------------------------------


async def test_the_toolset_builds_deps_for_a_run_given_none(injector: AgenToolInjector) -> None:
    # "an agentool that declares a deps_type gets the same deps on every surface that is not given
    # any"; "a tool that declared a deps type is never handed None". Before the fix, the tool got
    # the run's `None` and failed with AttributeError: 'NoneType' object has no attribute 'greeting'.
    make_greeter()
    agent = Agent(call_then_answer('greeter_greet', {'user': 'u1'}), toolsets=[AgenToolToolset()])
    assert (await agent.run('hi')).output == 'hello Ada'
    assert MADE == ['make', 'close']  # made for the call, closed when it ended
    # Given deps still win (the run's own, or the toolset's `deps=` function).
    given = GreeterDeps(kv=injector.handle('kv'), greeting=Greeting())
    model = call_then_answer('greeter_greet', {'user': 'u1'})
    agent = Agent(model, toolsets=[AgenToolToolset()], deps_type=GreeterDeps)
    assert (await agent.run('hi', deps=given)).output == 'hello Ada'


async def test_the_toolset_reports_deps_it_cannot_build_as_missing_deps(injector: AgenToolInjector) -> None:
    make_greeter(provide=False)  # nothing provides Greeting
    agent = Agent(call_then_answer('greeter_greet', {'user': 'u1'}), toolsets=[AgenToolToolset()])
    with pytest.raises(MissingDepsError) as caught:
        await agent.run('hi')
    assert caught.value.details['deps_type'] == 'GreeterDeps'
    assert 'Greeting' in caught.value.details['reason']


# --- options of the wrong type are refused where they are given ------------------------------------


def test_an_injector_refuses_a_registry_that_is_not_one() -> None:
    with pytest.raises(ConfigurationError) as caught:
        AgenToolInjector(registry=3)  # pyright: ignore[reportArgumentType]
    assert caught.value.details['option'] == 'registry'


def test_replace_must_be_a_flag(injector: AgenToolInjector) -> None:
    make_greeter()
    with pytest.raises(ConfigurationError) as caught:
        injector.provide(Greeting, Greeting, replace='no')  # pyright: ignore[reportArgumentType]
    assert caught.value.details['option'] == 'replace'
    with pytest.raises(ConfigurationError) as caught:
        injector.register('kv', injector.get('kv'), replace='no')  # pyright: ignore[reportArgumentType]
    assert caught.value.details['option'] == 'replace'


def test_a_resource_type_that_cannot_be_a_key_is_a_configuration_error(injector: AgenToolInjector) -> None:
    # Before the fix: TypeError: unhashable type: 'list'.
    with pytest.raises(ConfigurationError) as caught:
        injector.provide([Greeting], Greeting)  # pyright: ignore[reportArgumentType]
    assert caught.value.details['option'] == 'type_'
    assert [1] not in injector  # a membership test never raises


# --- MCP ---------------------------------------------------------------------------------------------


async def test_an_unknown_mcp_tool_is_a_protocol_error_with_suggestions(injector: AgenToolInjector) -> None:
    make_greeter()
    async with Client(create_mcp_server()) as client:  # pyright: ignore[reportArgumentType]
        with pytest.raises(MCPError) as caught:
            await client.call_tool('greeter_gret', {'user': 'u1'})
    assert caught.value.error.code == INVALID_PARAMS
    assert "unknown tool 'greeter_gret'; did you mean 'greeter_greet'?" in caught.value.error.message
    assert caught.value.error.data == {'tool': 'greeter_gret', 'suggestions': ['greeter_greet']}


async def test_mcp_builds_deps_per_call_and_closes_them(injector: AgenToolInjector) -> None:
    make_greeter()
    async with Client(create_mcp_server()) as client:  # pyright: ignore[reportArgumentType]
        result = await client.call_tool('greeter_greet', {'user': 'u1'})
        assert not result.is_error
        assert result.structured_content == {'result': 'hello Ada'}
        assert MADE == ['make', 'close']
        result = await client.call_tool('greeter_greet', {'user': 'u2'})
    assert result.structured_content == {'result': 'hello u2'}
    assert MADE == ['make', 'close'] * 2  # one run scope per call


# --- handles on agentools named by anything but a name ------------------------------------------------


def test_uses_refuses_a_name_that_is_not_one() -> None:
    # Before the fix, `Uses(3)` was accepted and the first run (or `validate()`) failed with
    # TypeError: 'int' object is not iterable.
    with pytest.raises(ConfigurationError) as caught:
        Uses(3)  # pyright: ignore[reportArgumentType]
    assert caught.value.details['option'] == 'name'
    with pytest.raises(ConfigurationError):
        Uses('')


@pytest.mark.parametrize('name', [3, None, [1], '', '  '])
def test_a_handle_on_a_name_that_is_not_one_is_refused(injector: AgenToolInjector, name: Any) -> None:
    with pytest.raises(ConfigurationError) as caught:
        injector.handle(name)
    assert caught.value.details['option'] == 'name'


# --- running by name: every input kind, `call` equal to `run` -----------------------------------------


class Colour(Enum):
    RED = 'red'


class Rich(BaseModel):
    at: datetime
    amount: Decimal
    id: UUID
    colour: Colour
    where: PurePosixPath
    tags: set[str]


class RichInput(BaseOperationInput):
    operation: Literal['echo', 'other']
    at: datetime
    amount: Decimal
    id: UUID
    colour: Colour
    where: PurePosixPath
    tags: set[str]
    unused: int = 0


async def echo(at: datetime, amount: Decimal, id: UUID, colour: Colour, where: PurePosixPath, tags: set[str]) -> Rich:
    """Give the values back."""
    return Rich(at=at, amount=amount, id=id, colour=colour, where=where, tags=tags)


RICH: dict[str, Any] = {
    'at': datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC),
    'amount': Decimal('0.10'),
    'id': UUID(int=7),
    'colour': Colour.RED,
    'where': PurePosixPath('/a/b'),
    'tags': {'x'},
}


def make_rich() -> None:
    create_agentool(
        'rich', RichInput, RoutingConfig(operation_map={'echo': 'echo', 'other': 'echo'}), [echo], output_type=Rich
    )


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
        ('', InvalidJSONError),
        ('{', InvalidJSONError),
        (b'\xff', InvalidJSONError),
        (object(), InvalidInputError),
        ({'operation': 'echo', 'x': object()}, InvalidInputError),
        ({'operation': 'nope'}, UnknownOperationError),
        ({'operation': 'echo'}, InputValidationError),
        ('x' * 2_000_000, InputTooLargeError),
    ],
)
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
        if name == 'rihc':
            assert caught.value.details['suggestions'] == ['rich']
            assert "did you mean 'rich'?" in str(caught.value)
    with pytest.raises(AgenToolNotFoundError):
        injector.get(name)
    if isinstance(name, str):
        with pytest.raises(AgenToolNotFoundError), injector.override(**{name: 1}):
            pass


async def test_a_model_input_sends_only_the_fields_its_caller_set(injector: AgenToolInjector) -> None:
    # `unused` left at its default is not sent, so the operation does not refuse it as given.
    make_rich()
    create_agentool('strict', RichInput, RoutingConfig(operation_map={'echo': 'echo', 'other': 'echo'}), [echo])
    model = RichInput(operation='echo', **RICH)
    assert await injector.call('rich', model) == Rich(**RICH)
    with pytest.raises(InputValidationError) as caught:
        await injector.call('rich', RichInput(operation='echo', unused=1, **RICH))
    assert [e['loc'] for e in caught.value.errors] == [['unused']]


# --- resources: run scope, transient scope, closing -------------------------------------------------

EVENTS: list[str] = []


class Pool:
    def __init__(self) -> None:
        EVENTS.append('make pool')

    async def aclose(self) -> None:
        EVENTS.append('close pool')


class Repo:
    def __init__(self, pool: Pool) -> None:
        self.pool = pool
        EVENTS.append('make repo')

    def close(self) -> None:
        EVENTS.append('close repo')


@dataclass
class InnerDeps:
    pool: Pool


@dataclass
class OuterDeps:
    repo: Repo
    pool: Pool
    inner: AgenToolHandle[bool]


class StepInput(BaseOperationInput):
    operation: Literal['go', 'fail', 'wait']


WAITING: list[asyncio.Event] = []  # set by a tool once it runs; made in each test's own loop


async def inner_go(ctx: RunContext[InnerDeps]) -> bool:
    """Whether the run's pool is the one the caller got (run scope: shared)."""
    return ctx.deps.pool is SEEN[-1]


SEEN: list[Pool] = []


async def outer_go(ctx: RunContext[OuterDeps]) -> bool:
    """Call inner through its handle, in the same run."""
    SEEN.append(ctx.deps.pool)
    assert ctx.deps.repo.pool is ctx.deps.pool
    return await ctx.deps.inner({'operation': 'go'})


async def outer_fail(ctx: RunContext[OuterDeps]) -> bool:
    raise KeyError('the tool failed')


async def outer_wait(ctx: RunContext[OuterDeps]) -> bool:
    WAITING[-1].set()
    await asyncio.Event().wait()
    return False


def make_layers(injector: AgenToolInjector) -> None:
    EVENTS.clear()
    SEEN.clear()
    ops = {'go': 'inner_go', 'fail': 'inner_go', 'wait': 'inner_go'}
    create_agentool('inner', StepInput, RoutingConfig(operation_map=ops), [inner_go], deps_type=InnerDeps)
    ops = {'go': 'outer_go', 'fail': 'outer_fail', 'wait': 'outer_wait'}
    tools = [outer_go, outer_fail, outer_wait]
    create_agentool('outer', StepInput, RoutingConfig(operation_map=ops), tools, deps_type=OuterDeps)
    injector.provide(Pool, Pool)
    injector.provide(Repo, Repo)
    injector.validate()


MADE_AND_CLOSED = ['make pool', 'make repo', 'close repo', 'close pool']


@pytest.mark.parametrize('surface', ['call', 'run', 'agent'])
async def test_run_scoped_resources_are_shared_in_a_run_and_closed_newest_first(
    injector: AgenToolInjector, surface: str
) -> None:
    make_layers(injector)
    if surface == 'agent':
        assert (await injector.get('outer').run('{"operation": "go"}')).output is True
    else:
        output = await getattr(injector, surface)('outer', {'operation': 'go'})
        assert (output if surface == 'call' else output.output) is True
    assert EVENTS == MADE_AND_CLOSED


@pytest.mark.parametrize('surface', ['call', 'run'])
async def test_resources_are_closed_when_the_tool_fails_and_the_error_is_unchanged(
    injector: AgenToolInjector, surface: str
) -> None:
    make_layers(injector)
    with pytest.raises(KeyError, match='the tool failed'):
        await getattr(injector, surface)('outer', {'operation': 'fail'})
    assert EVENTS == MADE_AND_CLOSED


@pytest.mark.parametrize('surface', ['call', 'run'])
async def test_resources_are_closed_when_the_run_is_cancelled(injector: AgenToolInjector, surface: str) -> None:
    make_layers(injector)
    WAITING.append(asyncio.Event())
    task = asyncio.create_task(getattr(injector, surface)('outer', {'operation': 'wait'}))
    await WAITING[-1].wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert EVENTS == MADE_AND_CLOSED


async def test_a_transient_resource_is_made_for_each_consumer(injector: AgenToolInjector) -> None:
    make_layers(injector)
    injector.provide(Pool, Pool, scope='transient', replace=True)
    with pytest.raises(AssertionError):  # the repo's pool is not the deps' pool any more
        await injector.call('outer', {'operation': 'go'})
    assert EVENTS.count('make pool') == EVENTS.count('close pool') == 2


async def test_one_run_scope_shares_a_resource_between_concurrent_calls(injector: AgenToolInjector) -> None:
    make_layers(injector)

    async def slow_pool() -> Pool:
        await asyncio.sleep(0)  # really waits: concurrent consumers must wait for this one
        return Pool()

    injector.provide(Pool, slow_pool, replace=True)
    async with injector.run_scope():
        outputs = await asyncio.gather(*(injector.call('outer', {'operation': 'go'}) for _ in range(20)))
        assert EVENTS.count('make pool') == 1
        assert len({id(pool) for pool in SEEN}) == 1
    assert outputs == [True] * 20
    assert EVENTS.count('close pool') == 1
    assert EVENTS[-1] == 'close pool'


async def test_create_deps_is_synchronous_until_a_factory_really_waits(injector: AgenToolInjector) -> None:
    make_layers(injector)
    deps = injector.create_deps('outer')
    assert isinstance(deps, OuterDeps)
    assert deps.repo.pool is deps.pool
    assert deps.inner == injector.handle('inner')

    async def waiting_pool() -> Pool:
        await asyncio.sleep(0.001)
        return Pool()

    injector.provide(Pool, waiting_pool, replace=True)
    with pytest.raises(DepsUnavailableError) as caught:
        injector.create_deps('outer')
    assert 'acreate_deps' in str(caught.value)
    assert isinstance(await injector.acreate_deps('outer'), OuterDeps)


# --- overrides ---------------------------------------------------------------------------------------


async def test_overrides_nest_are_undone_on_error_and_reach_through_handles(injector: AgenToolInjector) -> None:
    make_greeter()

    async def greet_u1() -> str:
        return await injector.call('greeter', {'operation': 'greet', 'user': 'u1'})

    with injector.override(kv='Outer'):
        assert await greet_u1() == 'hello Outer'
        inner: list[str] = []

        async def fail_inside() -> None:
            with injector.override(kv=lambda input: f'Inner {input.key}'):
                inner.append(await greet_u1())
                raise RuntimeError

        with pytest.raises(RuntimeError):
            await fail_inside()
        assert inner == ['hello Inner u1']
        assert await greet_u1() == 'hello Outer'
    assert await greet_u1() == 'hello Ada'


async def test_overrides_are_task_local(injector: AgenToolInjector) -> None:
    make_greeter()
    entered = asyncio.Event()
    done = asyncio.Event()

    async def overriding() -> str:
        with injector.override(kv='Mock'):
            entered.set()
            await done.wait()
            return await injector.call('greeter', {'operation': 'greet', 'user': 'u1'})

    task = asyncio.create_task(overriding())
    await entered.wait()
    assert await injector.call('greeter', {'operation': 'greet', 'user': 'u1'}) == 'hello Ada'
    done.set()
    assert await task == 'hello Mock'

    async def worker(i: int) -> str:
        with injector.override(kv=f'n{i}'):
            await asyncio.sleep(0)
            return await injector.call('greeter', {'operation': 'greet', 'user': 'u1'})

    assert await asyncio.gather(*(worker(i) for i in range(30))) == [f'hello n{i}' for i in range(30)]


async def test_a_stub_is_checked_against_the_output_type_and_its_exception_is_not_swallowed(
    injector: AgenToolInjector,
) -> None:
    make_rich()
    with injector.override(rich='not a Rich'), pytest.raises(OutputError):
        await injector.call('rich', {'operation': 'echo', **RICH})

    def broken(input: Any) -> Rich:
        raise LookupError('stub failed')

    with injector.override(rich=broken):
        with pytest.raises(LookupError, match='stub failed'):
            await injector.call('rich', {'operation': 'echo', **RICH})
        with pytest.raises(LookupError, match='stub failed'):
            await injector.run('rich', {'operation': 'echo', **RICH})
        with pytest.raises(InputValidationError):  # the replaced agentool's validation still applies
            await injector.call('rich', {'operation': 'echo'})


# --- cycles ------------------------------------------------------------------------------------------




async def ping_a() -> str:
    return await get_injector().call('cyc_b', {'operation': 'ping'})


async def ping_b() -> str:
    return await get_injector().call('cyc_a', {'operation': 'ping'})


async def test_a_declared_cycle_is_refused_when_it_closes(injector: AgenToolInjector) -> None:
    create_agentool(
        'cyc_a', PingInput, RoutingConfig(operation_map={'ping': 'ping_a'}), [ping_a], dependencies=['cyc_b']
    )
    with pytest.raises(DependencyCycleError) as caught:
        create_agentool(
            'cyc_b', PingInput, RoutingConfig(operation_map={'ping': 'ping_b'}), [ping_b], dependencies=['cyc_a']
        )
    assert caught.value.details['path'] == ['cyc_b', 'cyc_a', 'cyc_b']


@pytest.mark.parametrize('surface', ['call', 'run'])
async def test_an_undeclared_cycle_is_reported_with_its_path_not_a_recursion_error(
    injector: AgenToolInjector, surface: str
) -> None:
    create_agentool('cyc_a', PingInput, RoutingConfig(operation_map={'ping': 'ping_a'}), [ping_a])
    create_agentool('cyc_b', PingInput, RoutingConfig(operation_map={'ping': 'ping_b'}), [ping_b])
    with pytest.raises(DependencyCycleError) as caught:
        await getattr(injector, surface)('cyc_a', {'operation': 'ping'})
    assert caught.value.details['path'] == ['cyc_a', 'cyc_b', 'cyc_a']
    assert 'cyc_a → cyc_b → cyc_a' in str(caught.value)


# --- the selection rule, as a public function ---------------------------------------------------------


@pytest.mark.parametrize(
    ('arguments', 'options', 'option'),
    [
        (('notes', 'get', Route(tool='get')), {'tags': 'ab', 'include': 'tag:a'}, 'tags'),  # not tags 'a' and 'b'
        (('notes', 'get', Route(tool='get')), {'tags': 3}, 'tags'),
        ((3, 'get', Route(tool='get')), {'include': 'n*'}, 'agentool'),
        (('notes', None, Route(tool='get')), {'include': 'notes.*'}, 'operation'),
        (('notes', 'get', 'get'), {}, 'route'),
    ],
)
def test_is_exposed_refuses_arguments_of_the_wrong_type(
    arguments: tuple[Any, ...], options: dict[str, Any], option: str
) -> None:
    # Before the fix: a lone string of tags was read as its characters (exposed by 'tag:a'), and the
    # others failed with TypeError or AttributeError.
    with pytest.raises(ConfigurationError) as caught:
        is_exposed(*arguments, **options)
    assert caught.value.details['option'] == option


def test_is_exposed_follows_the_documented_rule() -> None:
    old = Route(tool='get', deprecated=True, tags=('reader',))
    assert not is_exposed('notes', 'old_get', old)  # deprecated: not by default
    assert is_exposed('notes', 'old_get', old, include=['notes.old_get'])  # an allowlist, deprecated included
    assert is_exposed('notes', 'old_get', old, include='tag:read*')
    assert not is_exposed('notes', 'old_get', old, include='notes', exclude='*.old_*')  # exclude wins
    assert is_exposed('notes', 'get', Route(tool='get'), tags=['admin'], include='tag:admin')  # the agentool's tags


# --- the LLM toolset and MCP: the same arguments a run accepts -----------------------------------------


class StrictInput(BaseOperationInput):
    operation: Literal['go']
    at: datetime = Field(strict=True)
    id: UUID = Field(strict=True)


async def strict_go(at: datetime, id: UUID) -> str:
    return f'{at.isoformat()} {id}'


STRICT_ARGS = {'at': '2024-01-01T00:00:00Z', 'id': '00000000-0000-0000-0000-000000000001'}


STRICT_OUTPUT = '2024-01-01T00:00:00+00:00 00000000-0000-0000-0000-000000000001'


async def test_a_strict_field_is_accepted_by_call_from_json_text(injector: AgenToolInjector) -> None:
    create_agentool('strict', StrictInput, RoutingConfig(operation_map={'go': 'strict_go'}), [strict_go])
    assert await injector.call('strict', {'operation': 'go', **STRICT_ARGS}) == STRICT_OUTPUT


async def test_a_strict_field_is_accepted_by_run_as_by_call(injector: AgenToolInjector) -> None:
    create_agentool('strict', StrictInput, RoutingConfig(operation_map={'go': 'strict_go'}), [strict_go])
    agent = injector.get('strict')
    assert isinstance(agent, AgenToolAgent)
    for _ in range(2):  # through the graph, then lean
        assert (await injector.run('strict', {'operation': 'go', **STRICT_ARGS})).output == STRICT_OUTPUT
    assert agent.lean_runs == 1


async def test_mcp_accepts_the_arguments_call_accepts_for_strict_fields(injector: AgenToolInjector) -> None:
    create_agentool('strict', StrictInput, RoutingConfig(operation_map={'go': 'strict_go'}), [strict_go])
    async with Client(create_mcp_server()) as client:  # pyright: ignore[reportArgumentType]
        result = await client.call_tool('strict_go', STRICT_ARGS)
    assert not result.is_error, result.content


# --- the LLM toolset's errors table ------------------------------------------------------------------


class NoteInput(BaseOperationInput):
    operation: Literal['put', 'get', 'boom']
    key: str = Field(default='', max_length=20)
    text: str | None = None


async def note_put(key: str, text: str) -> str:
    """Store a note."""
    return f'stored {key}'


async def note_get(key: str) -> str:
    """Read a note, long."""
    return key * 50


async def note_boom(key: str) -> str:
    raise ZeroDivisionError('tool bug')


def make_notes() -> None:
    create_agentool(
        'notes',
        NoteInput,
        RoutingConfig(
            operation_map={
                'put': Route(tool='note_put', concurrent_safe=False),
                'get': Route(tool='note_get', max_output_chars=10),
                'boom': 'note_boom',
            }
        ),
        [note_put, note_get, note_boom],
        max_input_bytes=120,
    )


def scripted(*calls: tuple[str, dict[str, Any]]) -> tuple[FunctionModel, list[ToolReturnPart]]:
    """A model making `calls` one per turn, then answering 'done'; what each call returned is kept."""
    returned: list[ToolReturnPart] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returned.extend(p for p in messages[-1].parts if isinstance(p, ToolReturnPart))
        turn = sum(1 for m in messages if isinstance(m, ModelResponse))
        if turn < len(calls):
            return ModelResponse(parts=[ToolCallPart(*calls[turn])])
        return ModelResponse(parts=[TextPart('done')])

    return FunctionModel(model), returned


async def test_arguments_over_max_input_bytes_are_a_retry_carrying_input_too_large(injector: AgenToolInjector) -> None:
    make_notes()
    model, returned = scripted(('notes_put', {'key': 'k', 'text': 'x' * 200}), ('notes_put', {'key': 'k', 'text': 'x'}))
    assert (await Agent(model, toolsets=[AgenToolToolset()]).run('go')).output == 'done'
    first, second = returned
    assert first.outcome == 'retried'
    assert isinstance(first.content, list)
    (error,) = cast('list[dict[str, Any]]', first.content)
    assert error['type'] == 'input_too_large'
    assert "input to agentool 'notes' is" in error['msg']
    assert second.content == 'stored k'


async def test_a_long_output_reaches_the_model_cut_and_the_injector_whole(injector: AgenToolInjector) -> None:
    make_notes()
    model, returned = scripted(('notes_get', {'key': 'ab'}))
    await Agent(model, toolsets=[AgenToolToolset()]).run('go')
    assert returned[0].content == 'ababababab\n[... truncated: showing 10 of 100 characters (max_output_chars=10)]'
    assert await injector.call('notes', {'operation': 'get', 'key': 'ab'}) == 'ab' * 50


async def test_a_tool_exception_propagates_out_of_the_llm_run_unchanged(injector: AgenToolInjector) -> None:
    make_notes()
    model, _ = scripted(('notes_boom', {'key': 'k'}))
    with pytest.raises(ZeroDivisionError, match='tool bug'):
        await Agent(model, toolsets=[AgenToolToolset()]).run('go')


async def test_tool_definitions_carry_the_route_metadata(injector: AgenToolInjector) -> None:
    make_notes()
    offered: dict[str, Any] = {}

    def spy(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        offered.update((tool.name, tool) for tool in info.function_tools)
        return ModelResponse(parts=[TextPart('done')])

    await Agent(FunctionModel(spy), toolsets=[AgenToolToolset(prefix='kb_')]).run('hi')
    assert sorted(offered) == ['kb_notes_boom', 'kb_notes_get', 'kb_notes_put']
    put = offered['kb_notes_put']
    assert put.sequential is True
    assert put.parameters_json_schema['required'] == ['text']  # the schema gives key a real default
    assert put.metadata['agentool']['agentool'] == 'notes'
    assert offered['kb_notes_get'].return_schema is None  # its output may be truncated


# --- MCP: listing, results, errors ----------------------------------------------------------------------


async def test_mcp_lists_hints_and_reports_errors_as_results(injector: AgenToolInjector) -> None:
    make_notes()
    async with Client(create_mcp_server(prefix='kb_')) as client:  # pyright: ignore[reportArgumentType]
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert sorted(tools) == ['kb_notes_boom', 'kb_notes_get', 'kb_notes_put']
        hints = tools['kb_notes_put'].annotations
        assert hints is not None
        assert hints.destructive_hint is False  # always sent: MCP's default would be true
        assert tools['kb_notes_get'].output_schema is None  # max_output_chars: no output schema
        assert tools['kb_notes_put'].meta == {
            'agentool': {
                'agentool': 'notes',
                'operation': 'put',
                'concurrent_safe': False,
                'max_output_chars': None,
                'tags': [],
                'deprecated': False,
            }
        }
        cases = {
            'kb_notes_put': ({'key': 'k'}, "field 'text': Field required"),
            'kb_notes_get': ({'key': 'k' * 21}, "field 'key': String should have at most 20 characters"),
            'kb_notes_boom': ({'key': 'k'}, 'failed: ZeroDivisionError: tool bug'),
        }
        for tool, (arguments, message) in cases.items():
            result = await client.call_tool(tool, arguments)
            assert result.is_error
            assert message in result.content[0].model_dump()['text']
        result = await client.call_tool('kb_notes_put', {'key': 'k', 'text': 'x' * 200})
        assert result.is_error
        assert (
            "operation 'put'): InputTooLargeError: input to agentool 'notes' is"
            in result.content[0].model_dump()['text']
        )
        result = await client.call_tool('kb_notes_get', {'key': 'ab'})
        assert not result.is_error
        assert result.structured_content is None
        assert result.content[0].model_dump()['text'].startswith('ababababab\n[... truncated')


@pytest.mark.parametrize(
    ('options', 'option'),
    [
        ({'name': 123}, 'name'),
        ({'tracer': 'x'}, 'tracer'),
        ({'deps': 'x'}, 'deps'),
        ({'instructions': 1}, 'instructions'),
    ],
)
def test_mcp_server_options_of_the_wrong_type_are_refused_when_built(options: dict[str, Any], option: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        create_mcp_server(**options)
    assert caught.value.details['option'] == option


# --- deps a type lets be None, until the wiring can build them ---------------------------------------


@dataclass
class LaterDeps:
    later: AgenToolHandle[str]


async def use_later(ctx: RunContext[LaterDeps | None]) -> str:
    return 'none' if ctx.deps is None else await ctx.deps.later({'operation': 'ping'})


async def later_ping() -> str:
    return 'later'


@pytest.mark.parametrize('surface', ['call', 'run'])
async def test_deps_given_up_as_none_are_built_once_their_dependency_is_registered(
    injector: AgenToolInjector, surface: str
) -> None:
    # Before the fix, the `None` was kept after `later` was registered ("until the wiring changes
    # (`provide`, `register`)" said the code; only `provide` forgot it).
    ops = RoutingConfig(operation_map={'ping': 'use_later'})
    create_agentool('user', PingInput, ops, [use_later], deps_type=LaterDeps | None)

    async def ask() -> str:
        output = await getattr(injector, surface)('user', {'operation': 'ping'})
        return output if surface == 'call' else output.output

    assert await ask() == 'none'
    create_agentool('later', PingInput, RoutingConfig(operation_map={'ping': 'later_ping'}), [later_ping])
    assert await ask() == 'later'
    injector.unregister('later')
    assert await ask() == 'none'


async def peek_optional(ctx: RunContext[Greeting | None]) -> str:
    return 'none' if ctx.deps is None else ctx.deps.word


async def test_an_optional_deps_type_is_built_when_the_injector_can(injector: AgenToolInjector) -> None:
    # `Store | None`: a `Store` when it can be built, `None` only when it cannot.
    agent = create_agentool(
        'peek',
        PingInput,
        RoutingConfig(operation_map={'ping': 'peek_optional'}),
        [peek_optional],
        deps_type=Greeting | None,
    )
    assert await injector.call('peek', {'operation': 'ping'}) == 'none'
    injector.provide(Greeting, Greeting)
    assert await injector.call('peek', {'operation': 'ping'}) == 'hello'
    assert (await injector.run('peek', {'operation': 'ping'})).output == 'hello'
    assert (await agent.run('{"operation": "ping"}')).output == 'hello'


# --- an injector subclass building deps itself -----------------------------------------------------------


@dataclass
class Tenant:
    name: str


async def whoami(ctx: RunContext[Tenant]) -> str:
    return ctx.deps.name


async def plain_ping() -> str:
    return 'pong'


class BothInjector(AgenToolInjector):
    asked: list[str]

    def create_deps(self, agent_name: str) -> Any:
        self.asked.append(f'sync {agent_name}')
        return Tenant(name='sync')

    async def acreate_deps(self, agent_name: str) -> Any:
        self.asked.append(f'async {agent_name}')
        return Tenant(name='async')


async def test_a_subclass_is_the_source_of_deps_on_every_surface() -> None:
    custom = BothInjector()
    custom.asked = []
    with use_injector(custom):
        who = create_agentool(
            'who', PingInput, RoutingConfig(operation_map={'ping': 'whoami'}), [whoami], deps_type=Tenant
        )
        create_agentool('plain', PingInput, RoutingConfig(operation_map={'ping': 'plain_ping'}), [plain_ping])
        assert await custom.call('who', {'operation': 'ping'}) == 'async'  # both overridden: the async one
        assert (await custom.run('who', {'operation': 'ping'})).output == 'async'
        assert (await who.run('{"operation": "ping"}')).output == 'async'
        assert await custom.handle('who')({'operation': 'ping'}) == 'async'
        agent = Agent(call_then_answer('who_ping', {}), toolsets=[AgenToolToolset()])
        assert (await agent.run('hi')).output == 'async'
        async with Client(create_mcp_server()) as client:  # pyright: ignore[reportArgumentType]
            result = await client.call_tool('who_ping', {})
        assert result.structured_content == {'result': 'async'}
        assert await custom.call('plain', {'operation': 'ping'}) == 'pong'  # never asked: no deps_type
        assert await custom.call('who', {'operation': 'ping'}, deps=Tenant(name='given')) == 'given'  # given deps win
    assert custom.asked == ['async who'] * 6


@pytest.mark.parametrize(
    ('options', 'error', 'text'),
    [
        ({'modules': 'json'}, ConfigurationError, 'json'),
        ({'modules': ['agentool_no_such_module_xyz']}, ConfigurationError, 'agentool_no_such_module_xyz'),
        ({'bogus': 1}, ConfigurationError, "unknown option 'bogus'"),
        ({'transport': 'carrier-pigeon'}, ConfigurationError, 'carrier-pigeon'),
        ({'http': 'localhost'}, ServingError, 'HttpOptions'),
        ({'name': 123}, ConfigurationError, 'name'),
    ],
)
def test_serve_refuses_bad_options_before_serving(options: dict[str, Any], error: type, text: str) -> None:
    with pytest.raises(error, match=text):
        serve(**options)


# --- a `deps=` function that is async ----------------------------------------------------------------------


async def test_an_async_deps_function_gives_its_deps_not_a_coroutine(injector: AgenToolInjector) -> None:
    # Before the fix, the tool got the coroutine as `ctx.deps` (AttributeError, and a coroutine never awaited).
    make_greeter(provide=False)

    async def deps_for(*args: Any) -> GreeterDeps:
        return GreeterDeps(kv=injector.handle('kv'), greeting=Greeting())

    agent = Agent(call_then_answer('greeter_greet', {'user': 'u1'}), toolsets=[AgenToolToolset(deps=deps_for)])
    assert (await agent.run('hi')).output == 'hello Ada'
    async with Client(create_mcp_server(deps=deps_for)) as client:  # pyright: ignore[reportArgumentType]
        result = await client.call_tool('greeter_greet', {'user': 'u1'})
    assert result.structured_content == {'result': 'hello Ada'}


class _UntypedInput(BaseOperationInput):
    operation: Literal['inf', 'nan', 'text', 'odd']


async def _untyped(operation: str) -> Any:
    return {'inf': {'v': float('inf')}, 'nan': [float('nan')], 'text': {'v': 'Infinity NaN'}, 'odd': object()}[
        operation
    ]


@pytest.mark.parametrize('lean', [True, False])
async def test_an_untyped_output_json_cannot_carry_is_refused_on_every_path(
    injector: AgenToolInjector, lean: bool
) -> None:
    # An untyped agentool's output is JSON text: `{"v":Infinity}` would be text no JSON parser takes.
    agent = create_agentool(
        'untyped',
        _UntypedInput,
        RoutingConfig(operation_map=dict.fromkeys(('inf', 'nan', 'text', 'odd'), '_untyped')),
        [_untyped],
    )
    agent.lean = lean
    text = json.dumps({'operation': 'text'})
    assert (await agent.run(text)).output == '{"v":"Infinity NaN"}'  # the first run shows a lean run its shape
    for operation, reason in (('inf', 'non_finite_number'), ('nan', 'non_finite_number'), ('odd', 'not_serialisable')):
        prompt = json.dumps({'operation': operation})
        for surface in (agent.run, partial(injector.call, 'untyped')):
            with pytest.raises(OutputError) as caught:
                await surface(prompt)
            assert caught.value.details['reason'] == reason, operation
    assert (await agent.run(text)).output == '{"v":"Infinity NaN"}'
    assert await injector.call('untyped', text) == '{"v":"Infinity NaN"}'
    assert isinstance(agent, AgenToolAgent)
    assert (agent.lean_runs > 0) is lean


@dataclass
class _Greeting:
    word: str = 'hello'


class _GreetInput(BaseOperationInput):
    operation: Literal['greet']


async def _greet(ctx: RunContext[_Greeting]) -> str:
    return ctx.deps.word


async def test_call_given_deps_none_builds_the_deps_as_run_does(injector: AgenToolInjector) -> None:
    create_agentool(
        'greeter', _GreetInput, RoutingConfig(operation_map={'greet': '_greet'}), [_greet], deps_type=_Greeting
    )
    prompt = '{"operation": "greet"}'
    assert (await injector.run('greeter', prompt, deps=None)).output == 'hello'
    assert await injector.call('greeter', prompt, deps=None) == 'hello'


async def test_lean_and_graph_runs_of_a_strict_schema_are_indistinguishable(injector: AgenToolInjector) -> None:
    agent = create_agentool('strict', StrictInput, RoutingConfig(operation_map={'go': 'strict_go'}), [strict_go])
    assert isinstance(agent, AgenToolAgent)
    prompt = json.dumps({'operation': 'go', **STRICT_ARGS})
    await agent.run(prompt)  # the first run shows a lean run its shape
    lean = await differential(agent, prompt)
    assert lean.result is not None
    assert lean.result.output == STRICT_OUTPUT
    # The manager tool call carries the validated values (a strict field refuses their text in Python mode).
    call = lean.result.all_messages()[1].parts[0]
    assert isinstance(call, ToolCallPart)
    assert call.args_as_dict() == {'operation': 'go', 'at': datetime(2024, 1, 1, tzinfo=UTC), 'id': UUID(int=1)}
    with pytest.raises(InputValidationError):  # and the text a strict field refuses is still refused
        await agent.run(json.dumps({'operation': 'go', 'at': 5, 'id': STRICT_ARGS['id']}))
