"""Phase 2 answers in whatever output mode the agent asks for."""

from __future__ import annotations

from typing import Any, Literal, NewType, cast

import pytest
from mcp import Client
from pydantic import BaseModel
from pydantic_ai import Agent, NativeOutput, PromptedOutput, TextOutput, ToolOutput

from agentool import (
    BaseOperationInput,
    ConfigurationError,
    OutputError,
    RoutingConfig,
    create_agentool,
    get_injector,
    get_registry,
)
from agentool.mcp import create_mcp_server


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
OUTPUT_TYPES: dict[str, Any] = {
    'point': Point,
    'label': Label,
    'number': float,
    'items': list[int],
    'mapping': dict[str, Any],
    'word': str,
}


def _shapes() -> None:
    create_agentool('shapes', ShapeInput, ROUTES, TOOLS, output_type=Any)


@pytest.mark.parametrize('operation', list(EXPECTED))
@pytest.mark.parametrize('wrapper', ['plain', 'tool', 'native', 'prompted'])
async def test_each_output_mode_gives_the_typed_value(operation: str, wrapper: str) -> None:
    _shapes()
    base = OUTPUT_TYPES[operation]
    output_type: Any = {
        'plain': base,
        'tool': ToolOutput(base),
        'native': NativeOutput(base),
        'prompted': PromptedOutput(base),
    }[wrapper]
    agent = Agent('agentool:shapes', output_type=output_type)
    result = await agent.run(f'{{"operation": "{operation}"}}')
    assert result.output == EXPECTED[operation]


@pytest.mark.parametrize('wrapper', ['plain', 'native', 'prompted'])
async def test_unions_of_models_pick_the_matching_member(wrapper: str) -> None:
    _shapes()
    union: Any = Point | Label
    output_type: Any = {'plain': union, 'native': NativeOutput(union), 'prompted': PromptedOutput(union)}[wrapper]
    agent = Agent('agentool:shapes', output_type=output_type)
    assert (await agent.run('{"operation": "point"}')).output == Point(x=1, y=2)
    assert (await agent.run('{"operation": "label"}')).output == Label(text='hi')


async def test_union_of_scalars_picks_by_json_type() -> None:
    _shapes()
    agent = Agent('agentool:shapes', output_type=list[int] | float)  # type: ignore[arg-type]
    assert (await agent.run('{"operation": "number"}')).output == 2.5
    assert (await agent.run('{"operation": "items"}')).output == [1, 2, 3]


async def test_text_or_model_output_uses_text_for_strings() -> None:
    _shapes()
    agent = Agent('agentool:shapes', output_type=[str, Point])
    assert (await agent.run('{"operation": "word"}')).output == 'hello world'
    assert (await agent.run('{"operation": "point"}')).output == Point(x=1, y=2)


async def test_text_output_function_receives_the_json_text() -> None:
    _shapes()

    def upper(text: str) -> str:
        return text.upper()

    agent = Agent('agentool:shapes', output_type=TextOutput(upper))
    assert (await agent.run('{"operation": "items"}')).output == '[1,2,3]'
    assert (await agent.run('{"operation": "word"}')).output == 'HELLO WORLD'


async def test_value_fitting_no_output_member_is_a_typed_error() -> None:
    _shapes()
    agent = Agent('agentool:shapes', output_type=Point | Label)  # type: ignore[arg-type]
    with pytest.raises(OutputError, match='fits none of the agent'):
        await agent.run('{"operation": "items"}')


def _upper(text: str) -> str:
    return text.upper()


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
    create_agentool(
        'maybe',
        ShapeInput,
        RoutingConfig(operation_map=dict.fromkeys(OUTPUT_TYPES, 'tool')),
        [tool],
        output_type=output_type,
    )
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
