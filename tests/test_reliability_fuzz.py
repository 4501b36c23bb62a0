"""Fuzzing the JSON boundary: every outcome is a typed output or an `AgenToolError`, nothing else."""

from __future__ import annotations

import json
import os
import tracemalloc
from datetime import date
from enum import StrEnum
from typing import Any, Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field
from pydantic_ai import Agent

from agentool import (
    AgenToolError,
    BaseOperationInput,
    InputTooLargeError,
    InvalidInputError,
    RoutingConfig,
    create_agentool,
    get_injector,
    use_registry,
)

HEAVY = os.environ.get('AGENTOOL_FUZZ') == '1'
"""`make fuzz`: many more examples, bigger strings, deeper nesting."""
BIG = (50 if HEAVY else 10) * 1024 * 1024
DEEP = 100_000 if HEAVY else 10_000


class Flat(BaseOperationInput):
    operation: Literal['echo', 'count']
    text: str = ''
    n: int = 0


class Address(BaseModel):
    street: str
    zip: str = Field(pattern=r'^\d{5}$')


class Nested(BaseOperationInput):
    operation: Literal['echo']
    address: Address
    tags: list[str] = Field(default_factory=list[str])
    when: date | None = None


class Color(StrEnum):
    RED = 'red'
    BLUE = 'blue'


class UnionInput(BaseOperationInput):
    operation: Literal['echo', 'count']
    value: int | str | list[int] | dict[str, float] = 0
    color: Color = Color.RED


class FreeOp(BaseModel):
    operation: str
    payload: Any = None


async def echo(**kwargs: Any) -> str:
    return json.dumps(kwargs, default=str)


async def count(**kwargs: Any) -> int:
    return len(kwargs)


SHAPES: dict[str, tuple[type[BaseModel], dict[str, Any]]] = {
    'flat': (Flat, {'echo': ('echo', lambda x: x.model_dump()), 'count': ('count', lambda x: x.model_dump())}),
    'nested': (Nested, {'echo': ('echo', lambda x: x.model_dump())}),
    'union': (UnionInput, {'echo': ('echo', lambda x: x.model_dump()), 'count': ('count', lambda x: x.model_dump())}),
    'free': (FreeOp, {'echo': ('echo', lambda x: x.model_dump())}),
}


def _agents() -> dict[str, Agent[Any, Any]]:
    return {
        name: create_agentool(name, schema, RoutingConfig(operation_map=routes), [echo, count], output_type=str)
        for name, (schema, routes) in SHAPES.items()
    }


# Any code point, lone surrogates (which no UTF-8 text can carry) made common.
characters = st.characters(exclude_categories=()) | st.sampled_from(['\ud800', '\udfff', 'é', '😀', '\x00'])
texts = st.text(alphabet=characters, max_size=20)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | texts,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)
field_names = st.sampled_from(['operation', 'text', 'n', 'address', 'tags', 'when', 'value', 'color', 'payload', 'x'])
operations = st.sampled_from(['echo', 'count', 'nope', '', 'ECHO']) | st.text(max_size=5)
objects = st.dictionaries(field_names, json_values, max_size=6).flatmap(
    lambda d: st.just(d) | operations.map(lambda op: {**d, 'operation': op})
)
prompts = (
    st.text(alphabet=characters, max_size=60)
    | json_values.map(json.dumps)
    | objects.map(json.dumps)
    | objects.map(lambda d: json.dumps(d, ensure_ascii=False))
    | objects.map(lambda d: json.dumps(d)[:-1])  # truncated JSON
)


async def _run(agent: Agent[Any, Any], prompt: str) -> None:
    try:
        result = await agent.run(prompt)
    except AgenToolError:
        return
    assert isinstance(result.output, str)


async def _call(name: str, prompt: str) -> None:
    """The direct path (no agent graph) must hold the same line."""
    try:
        output = await get_injector().call(name, prompt)
    except AgenToolError:
        return
    assert isinstance(output, str)


@settings(
    max_examples=3_000 if HEAVY else 150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(prompt=prompts, shape=st.sampled_from(sorted(SHAPES)))
async def test_any_prompt_is_an_output_or_a_typed_error(prompt: str, shape: str) -> None:
    with use_registry():
        agents = _agents()
        await _run(agents[shape], prompt)
        await _call(shape, prompt)


@pytest.mark.parametrize('text', ['x', 'é'])
async def test_refusing_a_huge_prompt_holds_at_most_one_copy_of_it(text: str) -> None:
    """Memory stays bounded by the input: an ASCII prompt is measured in place, other text encoded once."""
    agent = _agents()['flat']
    prompt = json.dumps({'operation': 'echo', 'text': text * BIG}, ensure_ascii=False)
    await _run(agent, '{}')  # first-run allocations (lazy imports, caches) are not the prompt's
    tracemalloc.start()
    try:
        with pytest.raises(InputTooLargeError):
            await agent.run(prompt)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    copy = 0 if prompt.isascii() else len(prompt.encode())
    assert peak < copy + 1024 * 1024


async def test_ten_megabyte_string_within_a_raised_limit_is_handled() -> None:
    agent = create_agentool(
        'big',
        Flat,
        RoutingConfig(operation_map={'echo': 'count', 'count': 'count'}),
        [count],
        max_input_bytes=2 * BIG,
    )
    prompt = json.dumps({'operation': 'echo', 'text': 'x' * BIG})
    assert (await agent.run(prompt)).output == 0


@pytest.mark.parametrize('shape', sorted(SHAPES))
@pytest.mark.parametrize('opener', ['[', '{"a":'])
async def test_ten_thousand_deep_nesting_fails_cleanly(shape: str, opener: str) -> None:
    agent = _agents()[shape]
    closer = ']' if opener == '[' else '}'
    field = 'payload' if shape == 'free' else 'text'
    prompt = '{"operation": "echo", "' + field + '": ' + opener * DEEP + '1' + closer * DEEP + '}'
    with pytest.raises(InvalidInputError):
        await agent.run(prompt)
