"""A run's output: the typed value in every output mode and shape, alike on every path, edge values too.

Phase 2 answers in whatever output mode the agent asks for (tool, native, prompted, text, unions, output
specs checked at creation). Whatever output shape carries the tool's own value, the graph, a lean run and
the plain model string give back `injector.call`'s value or all refuse it with the same typed error: a
union's members can share a JSON shape (`float | int`, two dataclasses with the same fields, a `StrEnum`
and `str`), native and prompted unions wrap scalars, text cannot carry `''`, some values JSON cannot
encode at all. pydantic-ai reads an empty text answer as no answer and turns a `ValidationError` raised
inside a tool into a retry request; an agentool's runs must still agree with each other and with the
direct path, and never turn a tool's own exception into something else.
"""

from __future__ import annotations

import dataclasses
import enum
import itertools
import json
from functools import partial
from typing import Any, Literal, NewType, cast, get_type_hints

import pytest
from mcp import Client
from pydantic import BaseModel, ValidationError, field_serializer
from pydantic_ai import Agent, ApprovalRequired, NativeOutput, PromptedOutput, RunContext, TextOutput, ToolOutput

from agentool import (
    AgenToolAgent,
    AgenToolModel,
    BaseOperationInput,
    ConfigurationError,
    InputValidationError,
    OutputError,
    RoutingConfig,
    TransformError,
    create_agentool,
    get_injector,
    get_registry,
)
from agentool.core.injector import AgenToolInjector
from agentool.errors import InvalidInputError, ToolRetryError
from agentool.mcp import create_mcp_server
from tests._lean_diff import differential, every_path
from tests.agentools import CalcInput, EchoInput, echo, lean, make_calc


class Point(BaseModel):
    x: int
    y: int


class Label(BaseModel):
    text: str


class ShapeInput(BaseOperationInput):
    operation: Literal['point', 'label', 'number', 'items', 'mapping', 'word']


async def point() -> Point:
    return Point(x=1, y=2)


async def label() -> Label:
    return Label(text='hi')


async def number() -> float:
    return 2.5


async def items() -> list[int]:
    return [1, 2, 3]


async def mapping() -> dict[str, Any]:
    return {'k': [1, {'n': None}]}


async def word() -> str:
    return 'hello world'


ROUTES = RoutingConfig(operation_map={op: op for op in ('point', 'label', 'number', 'items', 'mapping', 'word')})
TOOLS = [point, label, number, items, mapping, word]
EXPECTED: dict[str, Any] = {
    'point': Point(x=1, y=2),
    'label': Label(text='hi'),
    'number': 2.5,
    'items': [1, 2, 3],
    'mapping': {'k': [1, {'n': None}]},
    'word': 'hello world',
}
OUTPUT_TYPES: dict[str, Any] = {tool.__name__: get_type_hints(tool)['return'] for tool in TOOLS}


def _shapes() -> None:
    create_agentool('shapes', ShapeInput, ROUTES, TOOLS, output_type=Any)


@pytest.mark.parametrize('operation', list(EXPECTED))
@pytest.mark.parametrize(
    'wrapper', [None, ToolOutput, NativeOutput, PromptedOutput], ids=['plain', 'tool', 'native', 'prompted']
)
async def test_each_output_mode_gives_the_typed_value(operation: str, wrapper: Any) -> None:
    _shapes()
    base = OUTPUT_TYPES[operation]
    agent = Agent('agentool:shapes', output_type=base if wrapper is None else wrapper(base))
    result = await agent.run(f'{{"operation": "{operation}"}}')
    assert result.output == EXPECTED[operation]


def _upper(text: str) -> str:
    return text.upper()


_MODELS: Any = Point | Label
_MODEL_OUTPUTS = {'point': Point(x=1, y=2), 'label': Label(text='hi')}


@pytest.mark.parametrize(
    ('output_type', 'outputs'),
    [
        (_MODELS, _MODEL_OUTPUTS),
        (NativeOutput(_MODELS), _MODEL_OUTPUTS),
        (PromptedOutput(_MODELS), _MODEL_OUTPUTS),
        (list[int] | float, {'number': 2.5, 'items': [1, 2, 3]}),
        ([str, Point], {'word': 'hello world', 'point': Point(x=1, y=2)}),
        (TextOutput(_upper), {'items': '[1,2,3]', 'word': 'HELLO WORLD'}),
    ],
    ids=['model-union', 'model-union-native', 'model-union-prompted', 'scalars', 'text-or-model', 'text-function'],
)
async def test_an_output_spec_gives_each_operation_what_it_fits(output_type: Any, outputs: dict[str, Any]) -> None:
    _shapes()
    agent = Agent('agentool:shapes', output_type=output_type)
    for operation, expected in outputs.items():
        assert (await agent.run(f'{{"operation": "{operation}"}}')).output == expected


async def test_value_fitting_no_output_member_is_a_typed_error() -> None:
    _shapes()
    agent = Agent('agentool:shapes', output_type=Point | Label)  # type: ignore[arg-type]
    with pytest.raises(OutputError, match='fits none of the agent'):
        await agent.run('{"operation": "items"}')


async def anything() -> Any:  # an annotation that promises nothing: only a run can tell what it gives
    return 2.5


_ANY_ROUTES = RoutingConfig(operation_map={op: 'anything' if op == 'number' else 'point' for op in OUTPUT_TYPES})


@pytest.mark.parametrize('output_type', [Point, NativeOutput(Point), ToolOutput(Point), [Point, Label], Point | None])
def test_an_output_type_no_routed_tool_can_return_is_refused_at_creation(output_type: Any) -> None:
    # `number` returns a float, which no output spec around `Point` ever accepts: every call of
    # operation 'number' would fail, so create_agentool says so instead of the first run.
    with pytest.raises(ConfigurationError, match=r"tool 'number' \(operation 'number'\) returns float") as caught:
        create_agentool('shaped', ShapeInput, ROUTES, TOOLS, output_type=output_type)
    kinds = {(p['kind'], p['tool']) for p in caught.value.details['problems']}
    assert ('unproducible_output', 'number') in kinds
    assert ('unproducible_output', 'point') not in kinds  # a Point is a Point
    assert ('unproducible_output', 'mapping') not in kinds  # a dict validates as a Point
    assert 'shaped' not in get_registry()


@pytest.mark.parametrize(
    ('returns', 'output_type'),
    [(dict[str, Any], Point), (str, int), (int, float), (Any, Point), (Point | None, Point), (list[int], tuple[int])],
)
def test_an_output_type_a_tool_might_return_is_accepted(returns: Any, output_type: Any) -> None:
    async def tool() -> Any:
        return None

    tool.__annotations__['return'] = returns
    routes = RoutingConfig(operation_map=dict.fromkeys(OUTPUT_TYPES, 'tool'))
    create_agentool('maybe', ShapeInput, routes, [tool], output_type=output_type)
    assert 'maybe' in get_registry()


@pytest.mark.parametrize(
    ('output_type', 'expected'),
    [
        (NativeOutput(Point), Point(x=1, y=2)),
        (PromptedOutput(Point), Point(x=1, y=2)),
        (ToolOutput(Point), Point(x=1, y=2)),
        ([Point, str], Point(x=1, y=2)),
        (NativeOutput([Point, Label]), Point(x=1, y=2)),
        (TextOutput(_upper), '{"X":1,"Y":2}'),
    ],
)
async def test_create_agentool_takes_any_output_spec(output_type: Any, expected: Any) -> None:
    # The manager checks a tool's result against the types inside the spec (it used to build a
    # validator for the marker itself: AttributeError, PydanticSchemaGenerationError).
    agent = create_agentool('shaped', ShapeInput, _ANY_ROUTES, [point, anything], output_type=output_type)
    for _ in range(3):  # the first run through the graph, the next ones lean where the spec allows
        assert (await agent.run('{"operation": "point"}')).output == expected
    assert await get_injector().call('shaped', '{"operation": "point"}') == expected  # the same as a run
    if not isinstance(output_type, TextOutput):
        with pytest.raises(OutputError, match="operation 'number': tool 'anything' returned a value that does not"):
            await agent.run('{"operation": "number"}')
    # Every description of the agentool reads the types inside the spec too.
    (entry,) = get_registry().export_catalog()['agentools']
    assert (entry['output_schema'] is None) == isinstance(output_type, TextOutput)
    get_registry().generate_api_spec()
    async with Client(create_mcp_server()) as client:
        assert 'shaped_point' in {tool.name for tool in (await client.list_tools()).tools}


Count = NewType('Count', int)


async def count() -> Count:
    return Count(3)


async def not_a_count() -> Count:
    return cast(Count, 'three')


class CountInput(BaseOperationInput):
    operation: Literal['good', 'bad']


async def test_a_newtype_output_is_a_type_not_an_output_function() -> None:
    routes = RoutingConfig(operation_map={'good': 'count', 'bad': 'not_a_count'})
    agent = create_agentool('counts', CountInput, routes, [count, not_a_count], output_type=Count)
    assert (await agent.run('{"operation": "good"}')).output == 3
    with pytest.raises(OutputError):
        await agent.run('{"operation": "bad"}')
    (entry,) = get_registry().export_catalog()['agentools']
    assert entry['output_schema'] == {'type': 'integer'}


# --- output shapes --------------------------------------------------------------------------------


class GoInput(BaseOperationInput):
    operation: Literal['go']
    n: int = 0


class Pair(BaseModel):
    left: int
    right: str


@dataclasses.dataclass
class DC:
    x: int
    y: str


@dataclasses.dataclass
class DC2:
    x: int
    y: str


class Mood(enum.StrEnum):
    HAPPY = 'happy'
    SAD = 'sad'


_names = itertools.count()
WARM = '{"operation": "go", "n": 1}'
PROBE = '{"operation": "go", "n": 0}'


def _go_agent(probe: Any, warm: Any, annotation: Any, output_type: Any = None) -> AgenToolAgent:
    """An agentool whose tool returns `warm` for n=1 (a run that teaches the lean path) and `probe` for n=0."""

    async def go(n: int) -> Any:
        return warm if n else probe

    go.__annotations__['return'] = annotation
    routes = RoutingConfig(operation_map={'go': 'go'})
    return lean(create_agentool(f'shapes_{next(_names)}', GoInput, routes, [go], output_type=output_type))


async def _every_go_path(agent: AgenToolAgent, *, lean_plan: bool = True) -> list[Any]:
    return await every_path(agent, PROBE, warm=WARM, lean_plan=lean_plan)


def _typed(values: list[Any]) -> list[tuple[type, Any]]:
    return [(type(value), value) for value in values]


async def test_an_empty_string_no_output_tool_takes_is_refused_as_empty_text() -> None:
    # `int | str`: text cannot carry '' and the only output tool takes an int.
    agent = _go_agent('', 1, int | str)
    refused = (OutputError, 'empty_text')
    assert await _every_go_path(agent) == [refused, refused, refused, '']


@pytest.mark.parametrize(
    ('annotation', 'value', 'output_type'),
    [
        (float | int, 1, None),
        (DC | DC2, DC2(x=1, y='a'), None),
        (Mood, Mood.HAPPY, Mood | str),
        (Mood, Mood.HAPPY, [Mood, str]),
        (Pair | dict[str, int], {'left': 0, 'right': 0}, None),
    ],
    ids=['int-not-float', 'dataclass-by-name', 'enum-union', 'enum-list', 'dict-not-model'],
)
async def test_a_union_member_is_chosen_by_the_value_own_type(annotation: Any, value: Any, output_type: Any) -> None:
    agent = _go_agent(value, value, annotation, output_type)
    assert _typed(await _every_go_path(agent)) == _typed([value] * 4)


@pytest.mark.parametrize('marker', [NativeOutput, PromptedOutput])
@pytest.mark.parametrize(
    ('annotation', 'value', 'warm'),
    [(int | None, None, 1), (int | None, 5, None), (int | str, 5, 'a'), (int | str, 'a', 5)],
)
async def test_native_and_prompted_unions_carry_scalar_members(
    marker: Any, annotation: Any, value: Any, warm: Any
) -> None:
    agent = _go_agent(value, warm, annotation, marker(annotation))
    assert _typed(await _every_go_path(agent, lean_plan=False)) == _typed([value] * 4)


@pytest.mark.parametrize(
    ('annotation', 'value', 'output_type'),
    [(bytes, b'\x80', None), (bytes, b'\x80', NativeOutput(bytes)), (str, '\ud800', NativeOutput(str))],
    ids=['bytes-tool', 'bytes-native', 'surrogate-native'],
)
async def test_a_value_json_cannot_encode_is_refused_as_not_serialisable(
    annotation: Any, value: Any, output_type: Any
) -> None:
    warm = b'ok' if annotation is bytes else 'ok'
    agent = _go_agent(value, warm, annotation, output_type)
    refused = (OutputError, 'not_serialisable')
    assert await _every_go_path(agent, lean_plan=output_type is None) == [refused, refused, refused, value]


@pytest.mark.parametrize('output_type', [[type(None), str], [None, str]], ids=['NoneType', 'None'])
async def test_none_in_a_list_output_spec_reaches_the_run_as_none(output_type: Any) -> None:
    agent = _go_agent(None, 'a', str | None, output_type)
    assert await _every_go_path(agent) == [None] * 4


# --- edge values and edge exceptions --------------------------------------------------------------


class TextInput(BaseOperationInput):
    operation: Literal['say', 'other']
    text: str = 'x'


async def say(ctx: RunContext[Any], text: str) -> str:
    return text


async def maybe(ctx: RunContext[Any], text: str) -> str | None:
    return None if text == 'none' else text


async def forget(ctx: RunContext[Any]) -> None:
    return None


def _agent(name: str, *tools: Any, **kwargs: Any) -> AgenToolAgent:
    names = [tool.__name__ for tool in tools]
    routing = RoutingConfig(operation_map={'say': names[0], 'other': names[-1]})
    return create_agentool(name, TextInput, routing, list(tools), **kwargs)


async def _every_path(agent: AgenToolAgent, prompt: str) -> list[Any]:
    return await every_path(agent, prompt, warm='{"operation": "say", "text": "warm"}')


@pytest.mark.parametrize('tool', [say, maybe], ids=['str', 'optional'])
async def test_an_empty_string_is_refused_by_every_run_and_returned_by_the_call(tool: Any) -> None:
    # For an optional output too: an empty text would come out as `None`, a different value.
    agent = _agent('say', tool)
    prompt = '{"operation": "say", "text": ""}'
    refused = (OutputError, 'empty_text')
    assert await _every_path(agent, prompt) == [refused, refused, refused, '']
    outcome = await differential(agent, prompt)
    assert isinstance(outcome.error, OutputError)
    assert 'empty string' in str(outcome.error)


async def test_an_output_tool_carries_the_empty_string() -> None:
    agent = _agent('say_tool', say, output_type=ToolOutput(str))
    assert (await agent.run('{"operation": "say", "text": ""}')).output == ''
    agent.lean = False
    assert (await agent.run('{"operation": "say", "text": ""}')).output == ''


async def test_none_reaches_an_optional_output_as_none() -> None:
    agent = _agent('maybe', maybe)
    assert agent.output_type == str | None
    assert await _every_path(agent, '{"operation": "say", "text": "none"}') == [None, None, None, None]
    assert await _every_path(agent, '{"operation": "say", "text": "null"}') == ['null'] * 4
    outcome = await differential(agent, '{"operation": "say", "text": "none"}')
    assert outcome.result is not None
    assert outcome.result.output is None


async def test_tools_returning_only_none_make_an_untyped_agentool() -> None:
    agent = _agent('forget', forget)
    assert agent.output_type is str
    prompt = '{"operation": "say"}'
    assert await every_path(agent, prompt, warm=prompt) == ['null'] * 4


async def test_a_none_and_a_text_tool_make_an_optional_output() -> None:
    agent = _agent('mixed', say, forget)
    assert agent.output_type == str | None
    await agent.run('{"operation": "say", "text": "a"}')
    assert (await agent.run('{"operation": "other"}')).output is None
    assert agent.lean_runs == 1
    agent.lean = False
    assert (await agent.run('{"operation": "other"}')).output is None


class Item(BaseModel):
    key: str


_RAISED: list[ValidationError] = []


async def check_item(ctx: RunContext[Any]) -> int:
    try:
        Item.model_validate({'key': 1})
    except ValidationError as error:
        _RAISED.append(error)
        raise
    return 0


def check_item_sync() -> int:
    Item.model_validate({'key': 1})
    return 0


async def fine(ctx: RunContext[Any]) -> int:
    return 1


@pytest.mark.parametrize('lean', [False, True])
async def test_a_validation_error_inside_a_tool_propagates_unchanged(lean: bool) -> None:
    routing = RoutingConfig(operation_map={'say': 'check_item', 'other': 'fine'})
    agent = create_agentool('check', TextInput, routing, [check_item, fine])
    await agent.run('{"operation": "other"}')
    agent.lean = lean
    _RAISED.clear()
    with pytest.raises(ValidationError) as raised:
        await agent.run('{"operation": "say"}')
    assert raised.value is _RAISED[-1]  # the tool's own exception object, not a retry error
    assert agent.lean_runs == (1 if lean else 0)


async def test_a_validation_error_inside_a_tool_propagates_from_every_surface() -> None:
    routing = RoutingConfig(operation_map={'say': 'check_item_sync', 'other': 'fine'})
    agent = create_agentool('check_sync', TextInput, routing, [check_item_sync, fine])
    prompt = '{"operation": "say"}'
    await agent.run('{"operation": "other"}')  # the first run shows the agent's shape

    async def iterate() -> None:
        async with agent.iter(prompt) as run:
            async for _ in run:
                pass

    with pytest.raises(ValidationError):
        await iterate()

    async def stream() -> None:
        async with agent.run_stream(prompt) as streamed:
            await streamed.get_output()

    with pytest.raises(ValidationError):
        await stream()
    with pytest.raises(ValidationError):
        await Agent('agentool:check_sync').run(prompt)
    with pytest.raises(ValidationError):
        await get_injector().call('check_sync', prompt)
    await differential(agent, '{"operation": "other"}')
    outcome = await differential(agent, prompt)
    assert isinstance(outcome.error, ValidationError)


async def test_a_history_ending_with_the_manager_return_takes_the_graph() -> None:
    # The model answers such a history from the manager's return (an unfinished run), not the new prompt.
    agent = _agent('resume', say)
    history = (await agent.run('{"operation": "say", "text": "one"}')).all_messages()[:3]
    agent.lean = False
    graph = await agent.run('{"operation": "say", "text": "two"}', message_history=history)
    agent.lean = True
    before = agent.lean_runs
    lean = await agent.run('{"operation": "say", "text": "two"}', message_history=history)
    assert agent.lean_runs == before
    assert lean.output == graph.output == 'one'
    assert len(lean.all_messages()) == len(graph.all_messages())


async def test_no_prompt_is_an_input_error() -> None:
    agent = _agent('silent', say)
    with pytest.raises(InvalidInputError, match='no input provided'):
        await agent.run()


def test_no_prompt_is_an_input_error_in_sync_runs_too() -> None:
    agent = _agent('silent_sync', say)
    with pytest.raises(InvalidInputError, match='no input provided') as raised:
        agent.run_sync(None)
    assert raised.value.details == {'agentool': 'silent_sync'}


@pytest.mark.parametrize('name', [123, None, ''])
def test_a_model_needs_an_agentool_name(name: Any) -> None:
    with pytest.raises(ConfigurationError, match='non-empty string') as raised:
        AgenToolModel(name)
    assert raised.value.details['option'] == 'name'


def test_a_model_registry_must_be_a_registry() -> None:
    with pytest.raises(ConfigurationError, match='registry'):
        AgenToolModel('x', registry='not a registry')  # pyright: ignore[reportArgumentType]


class NumberInput(BaseOperationInput):
    operation: Literal['go']
    n: int = 0


@pytest.mark.parametrize('annotation', [None | int, int | None, Pair | int | None, None | Pair | int])
async def test_a_union_naming_none_anywhere_runs_lean(annotation: Any) -> None:
    async def go(n: int) -> Any:
        return None if n == 3 else n

    go.__annotations__['return'] = annotation
    agent = create_agentool('nullable', NumberInput, RoutingConfig(operation_map={'go': 'go'}), [go])
    outputs = [(await agent.run(f'{{"operation": "go", "n": {n}}}')).output for n in (1, 2, 3)]
    assert outputs == [1, 2, None]
    assert agent.lean_runs == 2
    outcome = await differential(agent, '{"operation": "go", "n": 3}')
    assert outcome.result is not None
    assert outcome.result.output is None


class Shifty(BaseModel):
    a: int

    @field_serializer('a')
    def _spelled(self, value: int) -> int | str:
        return 'one' if value == 1 else value  # JSON that does not validate back, for a = 1 only


async def shifty(n: int) -> Shifty:
    return Shifty(a=n)


async def test_an_output_that_does_not_validate_back_fails_alike_on_both_paths() -> None:
    agent = create_agentool('shifty', NumberInput, RoutingConfig(operation_map={'go': 'shifty'}), [shifty])
    assert (await agent.run('{"operation": "go", "n": 0}')).output == Shifty(a=0)
    outcome = await differential(agent, '{"operation": "go", "n": 1}')
    assert isinstance(outcome.error, ToolRetryError)
    assert outcome.error.details['errors'] == [
        {
            'type': 'int_parsing',
            'loc': ['a'],
            'msg': 'Input should be a valid integer, unable to parse string as an integer',
        }
    ]
    assert await get_injector().call('shifty', '{"operation": "go", "n": 1}') == Shifty(a=1)  # no JSON in the way


async def deferring(ctx: RunContext[Any]) -> int:
    raise ApprovalRequired()


async def test_a_deferral_from_a_tool_ends_a_deterministic_run_unchanged() -> None:
    routing = RoutingConfig(operation_map={'say': 'deferring', 'other': 'fine'})
    agent = create_agentool('deferring', TextInput, routing, [deferring, fine])
    await agent.run('{"operation": "other"}')
    outcome = await differential(agent, '{"operation": "say"}')
    assert isinstance(outcome.error, ApprovalRequired)
    with pytest.raises(ApprovalRequired):
        await Agent('agentool:deferring').run('{"operation": "say"}')


class NumberedInput(BaseModel):
    operation: Literal[1, 2]
    x: int = 0


async def one(x: int) -> int:
    return x


async def two(x: int) -> int:
    return -x


ONE_TWO = RoutingConfig(operation_map={'1': 'one', '2': 'two'})


async def test_literal_int_operations_route_on_every_path() -> None:
    """`Literal[1, 2]` is accepted at creation (routes '1', '2'); valid input must then run, not fail as unknown."""
    agent = lean(create_agentool('numbered', NumberedInput, ONE_TWO, [one, two]))
    assert (await agent.run('{"operation": 2, "x": 3}')).output == -3
    outcome = await differential(agent, '{"operation": 1, "x": 5}')
    assert outcome.result is not None
    assert outcome.result.output == 5
    assert await get_injector().call('numbered', {'operation': 2, 'x': 4}) == -4
    assert (await Agent('agentool:numbered', output_type=int).run('{"operation": 1, "x": 7}')).output == 7
    with pytest.raises(InputValidationError):
        await agent.run('{"operation": 3, "x": 3}')


class IntOp(enum.IntEnum):
    ONE = 1
    TWO = 2


class IntEnumInput(BaseModel):
    operation: IntOp
    x: int = 0


async def test_int_enum_operations_route() -> None:
    agent = create_agentool('int_enum', IntEnumInput, ONE_TWO, [one, two])
    assert (await agent.run('{"operation": 2, "x": 3}')).output == -3
    with pytest.raises(InputValidationError):
        await agent.run('{"operation": 5}')


async def test_a_raising_transform_is_a_transform_error_on_both_paths() -> None:
    def broken(x: EchoInput) -> dict[str, Any]:
        raise KeyError('missing')

    routes = RoutingConfig(operation_map={'echo': ('echo', broken)})
    agent = lean(create_agentool('transform', EchoInput, routes, [echo]))
    with pytest.raises(TransformError) as raised:
        await agent.run('{"operation": "echo"}')
    assert raised.value.details == {'agentool': 'transform', 'operation': 'echo', 'tool': 'echo'}
    assert isinstance(raised.value.__cause__, KeyError)


class _UntypedInput(BaseOperationInput):
    operation: Literal['inf', 'nan', 'text', 'odd']


_UNTYPED = {'inf': {'v': float('inf')}, 'nan': [float('nan')], 'text': {'v': 'Infinity NaN'}, 'odd': object()}


async def _untyped(operation: str) -> Any:
    return _UNTYPED[operation]


@pytest.mark.parametrize('lean', [True, False])
async def test_an_untyped_output_json_cannot_carry_is_refused_on_every_path(
    injector: AgenToolInjector, lean: bool
) -> None:
    # An untyped agentool's output is JSON text: `{"v":Infinity}` would be text no JSON parser takes.
    routes = RoutingConfig(operation_map=dict.fromkeys(_UNTYPED, '_untyped'))
    agent = create_agentool('untyped', _UntypedInput, routes, [_untyped])
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


def test_a_tool_output_that_does_not_fit_its_type_is_a_typed_output_error() -> None:
    async def wrong(a: float, b: float) -> float:
        return 'x'  # pyright: ignore[reportReturnType]

    agent = create_agentool('calc', CalcInput, RoutingConfig(operation_map={'add': 'wrong', 'div': 'wrong'}), [wrong])
    with pytest.raises(OutputError) as caught:
        agent.run_sync('{"operation": "add", "a": 1, "b": 2}')
    assert caught.value.details == {'agentool': 'calc', 'operation': 'add', 'tool': 'wrong'}


def test_no_llm_no_tokens() -> None:
    result = make_calc().run_sync('{"operation": "add", "a": 1, "b": 2}')
    assert (result.usage.input_tokens, result.usage.output_tokens, result.usage.total_tokens) == (0, 0, 0)
