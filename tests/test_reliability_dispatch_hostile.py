"""Fuzzing dispatch with hostile families: every turn is an output or a typed agentool error, bounded.

Families: megabyte names, control characters, non-finite numbers, huge integers, deep nesting and
oversized payloads, in JSON prompts, commands and agentool answers, for a text agent and a typed
one. A turn ends with the agent's output (the model's or an agentool's) or an `AgenToolError`
whose message and details stay within a fixed bound; never a foreign exception, never a hang.
`make fuzz` (`AGENTOOL_FUZZ=1`) runs many more examples with bigger payloads.
"""

from __future__ import annotations

import json
import math
import os
from typing import Any, Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agentool import (
    AgenToolError,
    BaseOperationInput,
    DispatchError,
    InputTooLargeError,
    RoutingConfig,
    create_agentool,
)
from agentool.dispatch import CommandRule, DispatchCapability, JsonRule
from tests.agentools import NotesInput, ping, say

HEAVY = os.environ.get('AGENTOOL_FUZZ') == '1'
"""`make fuzz`: many more examples and bigger payloads."""
EXAMPLES = 1_000 if HEAVY else 50
LIMIT = 4096
"""Every agentool's `max_input_bytes` here, so that a short run's payloads can be over all of them."""
BIG = 24 * 1024 * 1024 if HEAVY else 4 * LIMIT
"""An oversized payload; a turn no rule claims hands it to the model, whose handling costs its size."""
MESSAGE_BOUND = 2_000
DETAILS_BOUND = 4_000


class AnswersInput(BaseOperationInput):
    operation: Literal['inf', 'nan', 'huge', 'deep', 'name']


def _deep(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


ANSWERS: dict[str, Any] = {
    'inf': [math.inf, -math.inf],
    'nan': {'x': math.nan},
    'huge': 10**5000,
    'deep': _deep(1_000),
    'name': 'n' * 1024 * 1024,
}


async def answer(operation: str) -> Any:
    return ANSWERS[operation]


def _model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[TextPart('model')])


@pytest.fixture
def agents() -> list[Agent[None, Any]]:
    """A text agent and a typed one, with the same rules; built once for all examples (stateless)."""
    create_agentool(
        'notes',
        NotesInput,
        RoutingConfig(operation_map={'say': 'say', 'ping': 'ping'}),
        [say, ping],
        max_input_bytes=LIMIT,
    )
    routes = dict.fromkeys(ANSWERS, 'answer')
    create_agentool(
        'answers',
        AnswersInput,
        RoutingConfig(operation_map=routes),
        [answer],
        max_input_bytes=LIMIT,
    )
    rules = [
        JsonRule(),
        CommandRule(pattern=r'/say (?P<text>.+)', agentool='notes', operation='say'),
        CommandRule(prefix='/ping', agentool='notes', operation='ping'),
        CommandRule(pattern=r'/answer (?P<operation>inf|nan|huge|deep|name)', agentool='answers'),
    ]
    output_types: list[Any] = [str, list[Any] | dict[str, Any] | int | str]
    return [
        Agent(
            FunctionModel(_model),
            deps_type=type(None),
            output_type=output_type,
            capabilities=[DispatchCapability(rules)],
        )
        for output_type in output_types
    ]


controls = st.text(alphabet=st.characters(categories=['Cc', 'Cs', 'Zl', 'Zp']), min_size=1, max_size=12)
sizes = st.sampled_from([LIMIT + 1, BIG])
depths = st.sampled_from([100, 1_000, 100_000 if HEAVY else 10_000])
non_finite = st.sampled_from(['NaN', 'Infinity', '-Infinity', '1e400', '-1e400'])
huge_ints = st.integers(min_value=400, max_value=LIMIT - 100).map(lambda n: '9' * n)


def _object(**fields: str) -> str:
    """A JSON object from fields given as JSON text (so non-JSON numbers can be written)."""
    return '{' + ', '.join(f'{json.dumps(k)}: {v}' for k, v in fields.items()) + '}'


prompts = st.one_of(
    # megabyte names
    sizes.map(lambda n: _object(agentool=json.dumps('n' * n), operation='"ping"')),
    sizes.map(lambda n: _object(operation=json.dumps('o' * n))),
    # control characters (and lone surrogates) in names, fields and commands
    controls.map(lambda c: _object(agentool=json.dumps(c), operation='"ping"')),
    controls.map(lambda c: _object(operation='"say"', text=json.dumps(c))),
    controls.map(lambda c: _object(operation=json.dumps(c))),
    controls.map(lambda c: f'/say {c}x'),
    controls.map(lambda c: f'/ping {c}x'),
    # non-finite numbers and huge integers, as fields and as the "agentool" key
    non_finite.map(lambda v: _object(operation='"say"', text=v)),
    non_finite.map(lambda v: _object(agentool=v, operation='"ping"')),
    huge_ints.map(lambda v: _object(operation='"say"', text=v)),
    huge_ints.map(lambda v: _object(agentool=v, operation='"ping"')),
    # deep nesting
    depths.map(lambda d: _object(operation='"say"', text='[' * d + ']' * d)),
    depths.map(lambda d: _object(agentool='{"a":' * d + '1' + '}' * d, operation='"ping"')),
    depths.map(lambda d: '{' * d + '}' * d),
    # oversized payloads: JSON, commands, free text
    sizes.map(lambda n: _object(operation='"say"', text=json.dumps('x' * n))),
    sizes.map(lambda n: '/say ' + 'x' * n),
    sizes.map(lambda n: '/ping ' + 'x' * n),
    sizes.map(lambda n: '{' + 'x' * n + '}'),
    # answers JSON (or a text output) cannot carry, or that are merely large
    st.sampled_from(sorted(ANSWERS)).map(lambda op: f'/answer {op}'),
)


async def _turn(agent: Agent[None, Any], prompt: str) -> AgenToolError | None:
    """The typed error the turn ends with, or `None` when it ends with an output."""
    try:
        result = await agent.run(prompt)
    except AgenToolError as error:
        return error
    assert result.output is not None
    return None


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(prompt=prompts)
async def test_every_hostile_turn_is_an_output_or_a_bounded_typed_error(
    agents: list[Agent[None, Any]], prompt: str
) -> None:
    for agent in agents:
        error = await _turn(agent, prompt)
        if error is None:
            continue
        assert len(str(error)) <= MESSAGE_BOUND, (type(error).__name__, str(error)[:300])
        if isinstance(error, DispatchError | InputTooLargeError):
            # Dispatch's own errors. An agentool's validation errors carry pydantic's error list, whose
            # `input` values are for the bound shared by every surface (`agentool.errors`) to cut.
            assert len(repr(error.details)) <= DETAILS_BOUND, (type(error).__name__, repr(error.details)[:300])
