"""`create_agentool`: creation-time checks, default transforms and output type inference. A tool
parameter no input field fills (it only ever gets its default) is a warning, not an error: the
agentool runs, but `validate_config` and `agentool show` list it, with the field it probably meant.
"""

from __future__ import annotations

import enum
import functools
import inspect
import itertools
import threading
from collections.abc import Awaitable
from datetime import UTC
from typing import Any, Literal, Union

import pytest
from pydantic import BaseModel, Field
from pydantic_ai import Agent, RunContext

from agentool import (
    AgenToolConfig,
    AgenToolNotFoundError,
    AgenToolRegistry,
    BaseOperationInput,
    ConfigProblem,
    ConfigurationError,
    DuplicateNameError,
    InputValidationError,
    Route,
    RoutingConfig,
    create_agentool,
    extract_tool_metadata,
    get_injector,
    get_registry,
    infer_output_type,
    use_injector,
)
from agentool.cli import main
from agentool.toolset import AgenToolToolset
from tests._lean_diff import differential
from tests.agentools import CalcInput, EchoInput, add, div, lean


class PairInput(BaseOperationInput):
    operation: Literal['first', 'second']
    x: int = 0
    y: int = 0


async def first(x: int) -> int:
    """Return x."""
    return x


async def second(ctx: RunContext[Any], y: int, scale: int = 10) -> int:
    return y * scale


PAIR = RoutingConfig(operation_map={'first': 'first', 'second': 'second'})


def test_route_to_a_missing_tool_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="operation 'second' routes to tool 'nope'") as caught:
        create_agentool('pair', PairInput, RoutingConfig(operation_map={'first': 'first', 'second': 'nope'}), [first])
    details = dict(caught.value.details)
    problems = details.pop('problems')
    assert details == {'agentool': 'pair', 'operation': 'second', 'tool': 'nope'}
    assert [(p['kind'], p['operation'], p['tool']) for p in problems] == [('missing_tool', 'second', 'nope')]


def test_two_different_tools_with_one_name_are_refused_rather_than_one_shadowing_the_other() -> None:
    async def impostor(x: int) -> int:
        return -x

    impostor.__name__ = 'first'
    routing = RoutingConfig(operation_map={'first': 'first', 'second': 'first'})
    with pytest.raises(ConfigurationError, match="2 different tools are named 'first'") as caught:
        create_agentool('pair', PairInput, routing, [first, impostor])
    problems = caught.value.details['problems']
    assert [(p['kind'], p['tool'], p['severity']) for p in problems] == [('duplicate_tool', 'first', 'error')]
    assert create_agentool('pair', PairInput, routing, [first, first])  # the same function twice is one tool


class NoOp(BaseModel):
    x: int


@pytest.mark.parametrize(
    ('schema', 'routes', 'message'),
    [
        (PairInput, {'first': 'first'}, r"operation 'second' of PairInput\.operation has no route"),
        (PairInput, {**PAIR.operation_map, 'third': 'first'}, r"'third', which PairInput\.operation cannot produce"),
        (NoOp, {'first': 'first'}, "no operation field 'operation'"),
    ],
    ids=['literal operation without a route', 'route the schema cannot produce', 'no operation field'],
)
def test_routes_that_do_not_fit_the_schema_are_refused(schema: type[BaseModel], routes: Any, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        create_agentool('pair', schema, RoutingConfig(operation_map=routes), [first, second])


def test_malformed_route_spec_is_refused() -> None:
    with pytest.raises(ConfigurationError, match=r"operation_map\['first'\]"):
        RoutingConfig(operation_map={'first': ('first', 'not callable')})  # type: ignore[dict-item]


def test_duplicate_name_is_refused_unless_replace(registry: AgenToolRegistry) -> None:
    create_agentool('pair', PairInput, PAIR, [first, second])
    created = registry.require('pair').created_at
    with pytest.raises(DuplicateNameError, match="'pair' is already registered"):
        create_agentool('pair', PairInput, PAIR, [first, second])
    create_agentool('pair', PairInput, PAIR, [first, second], version='2.0.0', replace=True)
    config = registry.require('pair')
    assert config.version == '2.0.0'
    assert config.created_at == created
    assert config.updated_at >= created
    assert config.created_at.tzinfo is UTC


async def test_default_transform_passes_matching_fields_and_keeps_tool_defaults() -> None:
    routes = RoutingConfig(operation_map={'first': ('first',), 'second': ('second', None)})
    agent = create_agentool('pair', PairInput, routes, [first, second])
    assert (await agent.run('{"operation": "first", "x": 7}')).output == 7
    assert (await agent.run('{"operation": "second", "y": 3}')).output == 30


async def test_enum_operation_field_routes_by_value() -> None:
    class Op(enum.Enum):
        UP = 'up'
        DOWN = 'down'

    class EnumInput(BaseModel):
        operation: Op
        n: int

    async def up(n: int) -> int:
        return n + 1

    async def down(n: int) -> int:
        return n - 1

    agent = create_agentool('updown', EnumInput, RoutingConfig(operation_map={'up': 'up', 'down': 'down'}), [up, down])
    assert (await agent.run('{"operation": "down", "n": 5}')).output == 4


def test_operation_field_name_is_configurable() -> None:
    class ActionInput(BaseModel):
        action: Literal['first']
        x: int

    routes = RoutingConfig(operation_field='action', operation_map={'first': 'first'})
    agent = create_agentool('act', ActionInput, routes, [first])
    assert agent.run_sync('{"action": "first", "x": 3}').output == 3


def test_tool_metadata_is_extracted() -> None:
    meta = extract_tool_metadata(second)
    assert meta.name == 'second'
    assert meta.is_async
    assert meta.parameters == ['y', 'scale']
    assert meta.parameter_types == {'y': 'int', 'scale': 'int'}
    assert meta.return_type == 'int'
    assert extract_tool_metadata(first).description == 'Return x.'


class A(BaseModel):
    a: int


class B(BaseModel):
    b: str


async def returns_a() -> A:
    return A(a=1)


async def returns_b() -> B:
    return B(b='x')


async def returns_a_too() -> A:
    return A(a=2)


async def returns_list() -> list[int]:
    return [1]


async def untyped():  # type: ignore[no-untyped-def]
    return 1


async def returns_any() -> Any:
    return 1


def test_output_inference_is_independent_of_tool_order() -> None:
    tools = [returns_a, returns_b, returns_a_too]
    results = {
        repr(infer_output_type([extract_tool_metadata(t) for t in order])) for order in itertools.permutations(tools)
    }
    assert len(results) == 1
    assert infer_output_type([extract_tool_metadata(t) for t in tools]) == Union[A, B]  # noqa: UP007


@pytest.mark.parametrize(
    ('tools', 'expected'),
    [
        ([returns_a, returns_a_too], A),
        ([returns_list], list[int]),
        ([first, second], int),
        ([returns_a, untyped], None),
        ([returns_any], None),
        ([], None),
    ],
)
def test_output_inference(tools: list[Any], expected: Any) -> None:
    assert infer_output_type([extract_tool_metadata(t) for t in tools]) == expected


async def test_union_of_models_gives_each_operation_its_own_typed_output() -> None:
    class ABInput(BaseOperationInput):
        operation: Literal['a', 'b']

    routes = RoutingConfig(operation_map={'a': 'returns_a', 'b': 'returns_b'})
    agent = create_agentool('ab', ABInput, routes, [returns_b, returns_a])
    assert (await agent.run('{"operation": "a"}')).output == A(a=1)
    assert (await agent.run('{"operation": "b"}')).output == B(b='x')


async def test_untyped_tools_give_json_text() -> None:
    class UInput(BaseOperationInput):
        operation: Literal['u']

    agent = create_agentool('u', UInput, RoutingConfig(operation_map={'u': 'untyped'}), [untyped])
    assert (await agent.run('{"operation": "u"}')).output == '1'


async def test_explicit_output_type_wins_and_coerces() -> None:
    class DInput(BaseOperationInput):
        operation: Literal['d'] = Field(description='only d')

    async def as_dict() -> dict[str, Any]:
        return {'a': 5}

    agent = create_agentool('d', DInput, RoutingConfig(operation_map={'d': 'as_dict'}), [as_dict], output_type=A)
    assert (await agent.run('{"operation": "d"}')).output == A(a=5)


@pytest.mark.parametrize('name', [5, None, ('pair',), 1.5, ''])
def test_a_name_that_is_not_a_string_is_refused_before_anything_is_stored(
    registry: AgenToolRegistry, name: Any
) -> None:
    create_agentool('pair', PairInput, PAIR, [first, second])
    with pytest.raises(ConfigurationError, match='agentool name must be a non-empty string') as caught:
        create_agentool(name, PairInput, PAIR, [first, second])
    assert caught.value.details == {'option': 'name', 'value': repr(name)}
    with pytest.raises(ConfigurationError, match='agentool name must be a non-empty string'):
        registry.register(name, registry.require('pair'))
    with pytest.raises(ConfigurationError, match='agentool name must be a non-empty string'):
        AgenToolRegistry.register(name, registry.require('pair'))
    assert registry.list_names() == ['pair']  # nothing stored: listings, catalogs and lookups still work
    assert [entry['name'] for entry in registry.export_catalog()['agentools']] == ['pair']
    with pytest.raises(AgenToolNotFoundError):
        Agent('agentool:nope').run_sync('{}')


def test_a_failed_creation_leaves_the_registry_and_injector_as_they_were(registry: AgenToolRegistry) -> None:
    with use_injector() as injector:
        with pytest.raises(ConfigurationError, match='toolsets') as caught:
            create_agentool('pair', PairInput, PAIR, [first, second], toolsets=5)  # pydantic-ai refuses it late
        assert caught.value.details['options'] == ['toolsets']
        assert 'pair' not in registry
        assert 'pair' not in injector
        agent = create_agentool('pair', PairInput, PAIR, [first, second], version='1.0.0')
        before = registry.require('pair')
        with pytest.raises(ConfigurationError, match='toolsets'):
            create_agentool('pair', PairInput, PAIR, [first, second], version='2.0.0', toolsets=5, replace=True)
        assert registry.require('pair') is before  # the replaced agentool is back, as it was
        assert agent.run_sync('{"operation": "first", "x": 3}').output == 3


def test_unknown_agent_options_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="unknown option 'bogus'") as caught:
        create_agentool('pair', PairInput, PAIR, [first, second], bogus=1)
    assert caught.value.details['options'] == ['bogus']


class Plain:  # a class pydantic cannot describe: only building the agent tells
    pass


_NO_TYPE = r'^output_type must be a type or typing form'
_REFUSED_BY_PYDANTIC_AI = r'pydantic_ai.Agent cannot be built with output_type='


@pytest.mark.parametrize(
    ('output_type', 'message'),
    [
        (42, _NO_TYPE),  # refused when the configuration is built, before any agent
        ([], _NO_TYPE),
        ('int', _NO_TYPE),
        (Plain, _REFUSED_BY_PYDANTIC_AI),
        (int | list[Plain], _REFUSED_BY_PYDANTIC_AI),  # the tools return int: only pydantic-ai can refuse it
    ],
)
def test_an_output_type_that_cannot_be_used_is_a_configuration_error(
    registry: AgenToolRegistry, output_type: Any, message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message) as caught:
        create_agentool('pair', PairInput, PAIR, [first, second], output_type=output_type)
    details = caught.value.details
    assert details.get('option') == 'output_type' or details.get('options') == ['output_type']
    assert 'pair' not in registry  # nothing left behind


@pytest.mark.parametrize(
    ('kwargs', 'option', 'message'),
    [
        ({'routing_config': {'operation_map': {'first': 'first'}}}, 'routing_config', 'must be a RoutingConfig'),
        ({'tools': ['first', 'second']}, 'tools', "'first' is not callable"),
        ({'tools': first}, 'tools', 'not a list'),
        ({'max_input_bytes': 'a'}, 'max_input_bytes', 'must be a positive int'),
        ({'max_input_bytes': -1}, 'max_input_bytes', 'must be a positive int'),
        ({'max_input_bytes': 0}, 'max_input_bytes', 'must be a positive int'),
        ({'max_input_bytes': True}, 'max_input_bytes', 'must be a positive int'),
        ({'tags': 'abc'}, 'tags', 'must be a list of strings'),  # not three tags 'a', 'b', 'c'
        ({'tags': [1]}, 'tags', 'must be a list of strings'),
        ({'dependencies': 'other'}, 'dependencies', 'must be a list of strings'),
        ({'examples': ['{"operation": "first"}']}, 'examples', 'must be a list of dicts'),
        ({'version': 2}, 'version', 'must be a string'),
        ({'description': ['a']}, 'description', 'must be a string or None'),
    ],
)
def test_bad_options_are_refused_naming_the_option(
    registry: AgenToolRegistry, kwargs: dict[str, Any], option: str, message: str
) -> None:
    arguments: dict[str, Any] = {'routing_config': PAIR, 'tools': [first, second], **kwargs}
    with pytest.raises(ConfigurationError, match=message) as caught:
        create_agentool('pair', PairInput, **arguments)
    assert caught.value.details['option'] == option
    assert caught.value.details['value'] == repr(kwargs[option])
    assert 'pair' not in registry


@pytest.mark.parametrize(
    ('build', 'kwargs', 'option'),
    [
        (RoutingConfig, {'operation_map': ['first']}, 'operation_map'),
        (RoutingConfig, {'operation_map': {1: 'first'}}, 'operation_map'),
        (RoutingConfig, {'operation_field': None, 'operation_map': {'first': 'first'}}, 'operation_field'),
        (Route, {'tool': first}, 'tool'),
        (Route, {'tool': 'first', 'transform': 'x'}, 'transform'),
        (Route, {'tool': 'first', 'max_output_chars': -1}, 'max_output_chars'),
        (Route, {'tool': 'first', 'max_output_chars': 'a'}, 'max_output_chars'),
        (Route, {'tool': 'first', 'retries': 'a'}, 'retries'),
        (Route, {'tool': 'first', 'durable': 'no'}, 'durable'),
        (Route, {'tool': 'first', 'read_only': 'yes'}, 'read_only'),
        (Route, {'tool': 'first', 'idempotent': 1}, 'idempotent'),
        (Route, {'tool': 'first', 'destructive': None}, 'destructive'),
        (Route, {'tool': 'first', 'concurrent_safe': 'false'}, 'concurrent_safe'),
        (Route, {'tool': 'first', 'deprecated': 0}, 'deprecated'),
        (Route, {'tool': 'first', 'description': 5}, 'description'),
        (Route, {'tool': 'first', 'tags': 'abc'}, 'tags'),
        (Route, {'tool': 'first', 'tags': (1,)}, 'tags'),
    ],
)
def test_bad_routing_values_are_refused_naming_the_option(build: Any, kwargs: dict[str, Any], option: str) -> None:
    with pytest.raises(ConfigurationError, match=option) as caught:
        build(**kwargs)
    assert caught.value.details['option'] == option
    if build is Route:
        assert caught.value.details['value'] == repr(kwargs[option])


def test_route_flags_are_booleans_and_tags_a_tuple() -> None:
    route = Route(tool='first', read_only=True, durable=False, tags=['a', 'b'])  # pyright: ignore[reportArgumentType]
    assert (route.read_only, route.durable, route.tags) == (True, False, ('a', 'b'))
    assert hash(route) == hash(Route(tool='first', read_only=True, durable=False, tags=('a', 'b')))


class AsyncCallable:
    """A tool object whose `__call__` is a coroutine function."""

    __name__ = 'async_callable'

    async def __call__(self, text: str) -> str:
        return f'object {text}'


def returns_awaitable(text: str) -> Any:
    """A plain function handing back a coroutine (a decorator that lost `async`)."""

    async def inner() -> str:
        return f'awaited {text}'

    return inner()


@pytest.mark.parametrize(
    'tool', [AsyncCallable(), returns_awaitable], ids=['async_call_object', 'sync_returns_awaitable']
)
async def test_tool_returning_an_awaitable_is_awaited(tool: Any) -> None:
    """A tool whose call gives a coroutine has its result awaited: never a foreign serialisation error."""
    name = tool.__name__
    expected = 'object hi' if name == 'async_callable' else 'awaited hi'
    agent = lean(create_agentool('awaits', EchoInput, RoutingConfig(operation_map={'echo': name}), [tool]))
    prompt = '{"operation": "echo", "text": "hi"}'
    assert (await agent.run(prompt)).output == expected
    outcome = await differential(agent, prompt)
    assert outcome.result is not None
    assert outcome.result.output == expected
    assert await get_injector().call('awaits', {'operation': 'echo', 'text': 'hi'}) == expected


class Service:
    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    async def method(self, ctx: RunContext[Any], text: str) -> str:
        return f'{self.prefix} {text} {ctx.deps}'


def _prefixed(prefix: str, text: str) -> str:
    return f'{prefix}:{text}'


async def test_bound_methods_and_partials_are_tools() -> None:
    method = RoutingConfig(operation_map={'echo': 'method'})
    agent = create_agentool('methods', EchoInput, method, [Service('svc').method], deps_type=Any)
    assert (await agent.run('{"operation": "echo", "text": "a"}', deps=1)).output == 'svc a 1'
    prefixed = RoutingConfig(operation_map={'echo': '_prefixed'})
    partial = create_agentool('partial', EchoInput, prefixed, [functools.partial(_prefixed, 'p')])
    assert (await partial.run('{"operation": "echo", "text": "b"}')).output == 'p:b'


class AliasInput(BaseOperationInput):
    operation: Literal['go']
    the_key: str = Field(alias='key')


async def go(the_key: str) -> str:
    return the_key.upper()


async def test_aliased_field_reaches_the_tool_by_field_name() -> None:
    agent = lean(create_agentool('alias', AliasInput, RoutingConfig(operation_map={'go': 'go'}), [go]))
    await agent.run('{"operation": "go", "key": "w"}')
    outcome = await differential(agent, '{"operation": "go", "key": "a"}')
    assert outcome.result is not None
    assert outcome.result.output == 'A'
    with pytest.raises(InputValidationError):
        await agent.run('{"operation": "go", "the_key": "a"}')


class _AddOnly(BaseOperationInput):
    operation: Literal['add']
    a: float
    b: float


def _dropped_async(a: float, b: float) -> Awaitable[float]:
    """A function a decorator left without `async`: it returns a coroutine."""

    async def add() -> float:
        return a + b

    return add()


def _create_adder(name: str, **options: Any) -> Any:
    routes = RoutingConfig(operation_map={'add': '_dropped_async'})
    return create_agentool(name, _AddOnly, routes, [_dropped_async], **options)


def test_a_callable_object_with_an_async_call_is_described_as_async() -> None:
    assert extract_tool_metadata(AsyncCallable()).is_async is True
    assert extract_tool_metadata(_dropped_async).is_async is False


async def test_a_tool_returning_an_awaitable_has_the_awaited_output_type() -> None:
    assert extract_tool_metadata(_dropped_async).return_type_annotation is float
    agent = _create_adder('dropped')
    assert agent.output_type is float
    assert (await agent.run('{"operation": "add", "a": 1, "b": 2}')).output == 3.0


@pytest.mark.parametrize('deps_type', [5, 'Deps', EchoInput(operation='echo', text='x')])
def test_create_agentool_refuses_a_deps_type_that_is_not_a_type(deps_type: Any) -> None:
    with pytest.raises(ConfigurationError, match='deps_type must be a type') as caught:
        _create_adder('bad_deps', deps_type=deps_type)
    assert caught.value.details['option'] == 'deps_type'


@pytest.mark.parametrize('deps_type', [None, Any, dict[str, int], int | None, EchoInput])
def test_create_agentool_takes_any_type_form_as_deps_type(deps_type: Any) -> None:
    _create_adder('deps_ok', deps_type=deps_type)


def test_the_lean_switch_takes_only_a_flag() -> None:
    agent = lean(_create_adder('flag'))
    with pytest.raises(ConfigurationError, match='lean must be True or False'):
        agent.lean = 'no'  # pyright: ignore[reportAttributeAccessIssue]
    assert agent.lean is True


def test_routes_without_a_transform_pass_only_the_fields_matching_the_tools_parameters() -> None:
    class NoteInput(BaseOperationInput):
        operation: Literal['shout']
        text: str
        unused: int = 0

    async def shout(text: str) -> str:
        return text.upper()

    agent = create_agentool('note', NoteInput, RoutingConfig(operation_map={'shout': 'shout'}), [shout])
    assert agent.run_sync('{"operation": "shout", "text": "hi"}').output == 'HI'
    # A field the operation does not use is refused rather than dropped.
    with pytest.raises(InputValidationError, match=r"field 'unused'.*does not use it"):
        agent.run_sync('{"operation": "shout", "text": "hi", "unused": 3}')


@pytest.mark.parametrize(
    ('operation_map', 'tools', 'details'),
    [
        ({'add': 'add'}, ['add', 'div'], {'operation': 'div'}),
        ({'add': 'add', 'div': 'div'}, ['add'], {'operation': 'div', 'tool': 'div'}),
    ],
)
def test_create_agentool_names_the_culprit(
    operation_map: dict[str, str], tools: list[str], details: dict[str, str]
) -> None:
    functions = {'add': add, 'div': div}
    with pytest.raises(ConfigurationError) as caught:
        create_agentool('calc', CalcInput, RoutingConfig(operation_map=operation_map), [functions[t] for t in tools])
    assert {'agentool': 'calc', **details}.items() <= caught.value.details.items()
    assert 'calc' not in get_registry()  # nothing registered


async def test_a_sync_tool_runs_in_a_worker_thread_and_its_docstring_describes_the_operation() -> None:
    threads: list[int] = []

    def mul(a: float, b: float) -> float:
        """Multiply two numbers."""
        threads.append(threading.get_ident())
        return a * b

    config = RoutingConfig(operation_map={'add': 'mul', 'div': 'mul'})
    agent = create_agentool('calc', CalcInput, config, [mul])
    assert (await agent.run('{"operation": "add", "a": 6, "b": 7}')).output == 42.0
    assert threads
    assert threads[0] != threading.get_ident()
    operations = get_registry().get_operations('calc')
    assert operations is not None
    assert operations['add']['description'] == 'Multiply two numbers.'


def test_a_route_to_a_missing_tool_suggests_the_nearest() -> None:
    routes = RoutingConfig(operation_map={'first': 'frist', 'second': 'second'})
    message = r"routes to tool 'frist', which is not among the tools given; did you mean 'first'\?"
    with pytest.raises(ConfigurationError, match=message) as caught:
        create_agentool('pair', PairInput, routes, [first, second])
    assert caught.value.message.endswith("the tools given: 'first', 'second'")


def test_unfillable_parameters_name_the_nearest_field_and_list_the_fields_once() -> None:
    async def wants_xx(xx: int) -> int:
        return xx

    async def wants_yy(yy: int, xx: int) -> int:
        return yy + xx

    routes = RoutingConfig(operation_map={'first': 'wants_xx', 'second': 'wants_yy'})
    with pytest.raises(ConfigurationError) as caught:
        create_agentool('pair', PairInput, routes, [wants_xx, wants_yy])
    message = caught.value.message
    assert message.count("(did you mean field 'x'?)") == 2
    assert "(did you mean field 'y'?)" in message
    assert message.count('the fields of PairInput are') == 1
    assert message.endswith(
        "the fields of PairInput are 'x', 'y': rename a parameter or a field to match, or give the route a transform"
    )
    fields = {(p['tool'], p['parameter'], p['field']) for p in caught.value.details['problems']}
    assert fields == {('wants_xx', 'xx', 'x'), ('wants_yy', 'xx', 'x'), ('wants_yy', 'yy', 'y')}


class NoteInput(BaseOperationInput):
    operation: Literal['get', 'delete']
    note_id: int = 0


async def get(note_id: int) -> str:
    return f'note {note_id}'


async def delete(id: int = 0) -> str:
    return f'deleted {id}'


ROUTES = RoutingConfig(operation_map={'get': 'get', 'delete': 'delete'})


def test_a_parameter_only_its_default_fills_is_a_warning_naming_the_field_it_probably_meant(
    registry: AgenToolRegistry,
) -> None:
    agent = create_agentool('notes', NoteInput, ROUTES, [get, delete])  # created: it runs
    (problem,) = registry.validate_config('notes')
    assert problem == ConfigProblem(
        kind='unfillable_default',
        severity='warning',
        message="operation 'delete' has no transform, and no field of NoteInput fills parameter 'id' of tool "
        "'delete': every call passes its default 0; did you mean field 'note_id'? Rename one of them, or give "
        'the route a transform',
        operation='delete',
        tool='delete',
        parameter='id',
        field='note_id',
    )
    assert problem.as_dict()['severity'] == 'warning'
    assert registry.validate_config('notes', include_warnings=False) == []
    assert agent.run_sync('{"operation": "delete"}').output == 'deleted 0'
    # a warning does not keep it from the surfaces that expose runnable agentools only
    assert [op.name for op in AgenToolToolset(registry=registry).operations] == ['notes_get', 'notes_delete']


def test_an_unregistered_configuration_is_checked_the_same_way(registry: AgenToolRegistry) -> None:
    config = AgenToolConfig(input_schema=NoteInput, routing_config=ROUTES, tools=(get, delete))
    assert [p.kind for p in registry.validate_config(config)] == ['unfillable_default']
    assert registry.validate_config(config, include_warnings=False) == []


def test_errors_come_before_warnings_and_keep_their_severity(registry: AgenToolRegistry) -> None:
    routes = RoutingConfig(operation_map={'get': 'missing', 'delete': 'delete'})
    registry.register('described', AgenToolConfig(input_schema=NoteInput, routing_config=routes, tools=(delete,)))
    problems = registry.validate_config('described')
    assert [(p.kind, p.severity) for p in problems] == [('missing_tool', 'error'), ('unfillable_default', 'warning')]
    assert [p.kind for p in registry.validate_config('described', include_warnings=False)] == ['missing_tool']


class ItemInput(BaseOperationInput):
    operation: Literal['go']
    user_id: str = ''
    item_id: str = ''


@pytest.mark.parametrize(
    ('parameter', 'meant'),
    [
        ('user_ids', 'user_id'),  # a close spelling
        ('user', 'user_id'),
        ('id', None),  # shares a word with two fields: no guess
        ('colour', None),
    ],
)
def test_the_field_it_probably_meant(registry: AgenToolRegistry, parameter: str, meant: str | None) -> None:
    def go(**extra: str) -> str:
        return ''

    # the tool's one parameter is called `parameter`, with a default; no field fills it
    go.__signature__ = inspect.Signature([inspect.Parameter(parameter, inspect.Parameter.KEYWORD_ONLY, default='')])  # type: ignore[attr-defined]
    create_agentool('items', ItemInput, RoutingConfig(operation_map={'go': 'go'}), [go])
    (problem,) = registry.validate_config('items')
    assert (problem.parameter, problem.field) == (parameter, meant)
    assert ('did you mean' in problem.message) is (meant is not None)
    assert (f'add a field {parameter!r}' in problem.message) is (meant is None)


def test_not_reported_when_a_field_a_transform_or_a_partial_fills_it(registry: AgenToolRegistry) -> None:
    transform = RoutingConfig(operation_map={'get': 'get', 'delete': ('delete', lambda x: {'id': x.note_id})})
    create_agentool('by_transform', NoteInput, transform, [get, delete])
    create_agentool('by_partial', NoteInput, ROUTES, [get, functools.partial(delete, id=3)])

    async def by_field(note_id: int = 0) -> str:
        return str(note_id)

    routes = RoutingConfig(operation_map={'get': 'by_field', 'delete': 'by_field'})
    create_agentool('by_field', NoteInput, routes, [by_field])
    assert [registry.validate_config(name) for name in ('by_transform', 'by_partial', 'by_field')] == [[], [], []]


def test_show_lists_the_warning(capsys: pytest.CaptureFixture[str]) -> None:
    create_agentool('notes', NoteInput, ROUTES, [get, delete])
    assert main(['show', 'notes']) == 0
    out = capsys.readouterr().out
    problems = out[out.index('  problems:\n') :].splitlines()
    assert problems[1].startswith("    warning: operation 'delete' has no transform, and no field of NoteInput")
    assert "did you mean field 'note_id'?" in problems[1]


def test_show_lists_no_problems_for_a_clean_agentool(capsys: pytest.CaptureFixture[str]) -> None:
    create_agentool('notes', NoteInput, RoutingConfig(operation_map={'get': 'get', 'delete': 'get'}), [get])
    assert main(['show', 'notes']) == 0
    assert 'problems:' not in capsys.readouterr().out


def test_create_agentool_names_a_required_parameter_no_field_fills() -> None:
    async def power(a: float, exponent: float) -> float:
        return a**exponent

    with pytest.raises(ConfigurationError, match="requires parameter 'exponent'") as caught:
        create_agentool('calc', CalcInput, RoutingConfig(operation_map={'add': 'power', 'div': 'div'}), [power, div])
    assert caught.value.details['parameter'] == 'exponent'
    problems = caught.value.details['problems']
    assert {(problem['kind'], problem['parameter']) for problem in problems} == {('unfillable_parameter', 'exponent')}
