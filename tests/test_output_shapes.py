"""A run's output is the tool's own value whatever output shape carries it, on every path.

A union's members can share a JSON shape (`float | int`, two dataclasses with the same fields, a
`StrEnum` and `str`), native and prompted unions wrap scalars, text cannot carry `''`, and some
values JSON cannot encode at all: the graph, a lean run and the plain model string must all give
back `injector.call`'s value, or all refuse it with the same typed error.
"""

from __future__ import annotations

import dataclasses
import enum
import itertools
from typing import Any, Literal

import pytest
from pydantic import BaseModel
from pydantic_ai import NativeOutput, PromptedOutput

from agentool import AgenToolAgent, BaseOperationInput, RoutingConfig, create_agentool
from agentool.errors import OutputError
from tests._lean_diff import every_path

pytestmark = pytest.mark.filterwarnings('ignore::DeprecationWarning')


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


def _agent(probe: Any, warm: Any, annotation: Any, output_type: Any = None) -> AgenToolAgent:
    """An agentool whose tool returns `warm` for n=1 (a run that teaches the lean path) and `probe` for n=0."""

    async def go(n: int) -> Any:
        return warm if n else probe

    go.__annotations__['return'] = annotation
    agent = create_agentool(
        f'shapes_{next(_names)}', GoInput, RoutingConfig(operation_map={'go': 'go'}), [go], output_type=output_type
    )
    assert isinstance(agent, AgenToolAgent)
    return agent


async def _every_path(agent: AgenToolAgent, *, lean_plan: bool = True) -> list[Any]:
    return await every_path(agent, PROBE, warm=WARM, lean_plan=lean_plan)


def _typed(values: list[Any]) -> list[tuple[type, Any]]:
    return [(type(value), value) for value in values]


async def test_an_empty_string_no_output_tool_takes_is_refused_as_empty_text() -> None:
    # `int | str`: text cannot carry '' and the only output tool takes an int.
    agent = _agent('', 1, int | str)
    refused = (OutputError, 'empty_text')
    assert await _every_path(agent) == [refused, refused, refused, '']


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
    agent = _agent(value, value, annotation, output_type)
    assert _typed(await _every_path(agent)) == _typed([value] * 4)


@pytest.mark.parametrize('marker', [NativeOutput, PromptedOutput])
@pytest.mark.parametrize(
    ('annotation', 'value', 'warm'),
    [(int | None, None, 1), (int | None, 5, None), (int | str, 5, 'a'), (int | str, 'a', 5)],
)
async def test_native_and_prompted_unions_carry_scalar_members(
    marker: Any, annotation: Any, value: Any, warm: Any
) -> None:
    agent = _agent(value, warm, annotation, marker(annotation))
    assert _typed(await _every_path(agent, lean_plan=False)) == _typed([value] * 4)


@pytest.mark.parametrize(
    ('annotation', 'value', 'output_type'),
    [(bytes, b'\x80', None), (bytes, b'\x80', NativeOutput(bytes)), (str, '\ud800', NativeOutput(str))],
    ids=['bytes-tool', 'bytes-native', 'surrogate-native'],
)
async def test_a_value_json_cannot_encode_is_refused_as_not_serialisable(
    annotation: Any, value: Any, output_type: Any
) -> None:
    warm = b'ok' if annotation is bytes else 'ok'
    agent = _agent(value, warm, annotation, output_type)
    refused = (OutputError, 'not_serialisable')
    assert await _every_path(agent, lean_plan=output_type is None) == [refused, refused, refused, value]


@pytest.mark.parametrize('output_type', [[type(None), str], [None, str]], ids=['NoneType', 'None'])
async def test_none_in_a_list_output_spec_reaches_the_run_as_none(output_type: Any) -> None:
    agent = _agent(None, 'a', str | None, output_type)
    assert await _every_path(agent) == [None] * 4
