"""The maximum prompt size (`max_input_bytes`) per agentool, followed by a replacement and an override,
and fuzzed: refused exactly when the UTF-8 size exceeds it.

The default (1 MiB), counting in UTF-8 bytes and size before parsing on every surface are the
matrix in tests/test_hostile_input.py.
"""

from __future__ import annotations

import json
import os
from typing import Any, Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic_ai import Agent

from agentool import BaseOperationInput, InputTooLargeError, RoutingConfig, create_agentool, get_injector, use_registry
from tests.surface_callers import TEXT_SURFACES, Refused

HEAVY = os.environ.get('AGENTOOL_FUZZ') == '1'
"""`make fuzz`: more examples."""


class EchoInput(BaseOperationInput):
    operation: Literal['echo']
    text: str = ''


CALLS: list[int] = []


async def echo(text: str = '') -> int:
    """The length of the text (a small output, whatever the input size)."""
    CALLS.append(len(text))
    return len(text)


def create_echo(name: str = 'echo', **kwargs: Any) -> Agent[Any, int]:
    return create_agentool(name, EchoInput, RoutingConfig(operation_map={'echo': 'echo'}), [echo], **kwargs)


def prompt_of_size(n_bytes: int, char: str = 'x') -> str:
    """A valid echo prompt of exactly `n_bytes` UTF-8 bytes (`char` must be one byte)."""
    frame = '{"operation": "echo", "text": ""}'
    return frame[:-2] + char * (n_bytes - len(frame)) + '"}'


@pytest.fixture(autouse=True)
def clear_calls() -> None:
    CALLS.clear()


@pytest.mark.parametrize('surface', TEXT_SURFACES)
async def test_each_agentool_has_its_own_limit(surface: str) -> None:
    create_echo('small', max_input_bytes=50)
    create_echo('large', max_input_bytes=500)
    prompt = prompt_of_size(100)
    refused = await TEXT_SURFACES[surface]('small', prompt)
    assert isinstance(refused, Refused)
    assert 'max_input_bytes' in refused.message
    assert not isinstance(await TEXT_SURFACES[surface]('large', prompt), Refused)
    assert [100 - len('{"operation": "echo", "text": ""}')] == CALLS


async def test_plain_agent_follows_a_replaced_limit() -> None:
    """The plain form finds its agentool at request time, so a replacement's limit applies at once."""
    create_echo(max_input_bytes=50)
    plain = Agent('agentool:echo', output_type=int)
    prompt = prompt_of_size(100)
    with pytest.raises(InputTooLargeError):
        await plain.run(prompt)
    create_echo(max_input_bytes=200, replace=True)
    assert (await plain.run(prompt)).output == 100 - len('{"operation": "echo", "text": ""}')


@pytest.mark.parametrize('replacement', ['value', 'function'])
async def test_an_override_keeps_the_limit(replacement: str) -> None:
    create_echo(max_input_bytes=50)
    injector = get_injector()
    stub: Any = 7 if replacement == 'value' else (lambda input: 7)
    with injector.override(echo=stub):
        assert await injector.call('echo', '{"operation": "echo"}') == 7
        for how in (injector.call, injector.run):
            with pytest.raises(InputTooLargeError):
                await how('echo', prompt_of_size(100))


# Any code point, with multi-byte characters and lone surrogates (which no UTF-8 text can carry) made common.
characters = st.characters(exclude_categories=()) | st.sampled_from(['é', '€', '😀', '\ud800', '\udfff'])


@settings(
    max_examples=2_000 if HEAVY else 100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    text=st.text(alphabet=characters, max_size=300 if HEAVY else 80),
    limit=st.integers(min_value=1, max_value=600 if HEAVY else 160),
)
async def test_refused_exactly_when_the_utf8_size_exceeds_the_limit(text: str, limit: int) -> None:
    with use_registry():
        create_echo(max_input_bytes=limit)
        prompt = json.dumps({'operation': 'echo', 'text': text}, ensure_ascii=False)
        size = len(prompt.encode('utf-8', errors='surrogatepass'))  # a lone surrogate counts as its 3 bytes
        surrogates = any(0xD800 <= ord(c) <= 0xDFFF for c in text)  # not valid UTF-8 text: a typed refusal
        for surface in ('model string', 'injector.call'):
            answer = await TEXT_SURFACES[surface]('echo', prompt)
            if size > limit:
                assert isinstance(answer, Refused)
                assert answer.kind == 'InputTooLargeError'
            elif surrogates:
                assert isinstance(answer, Refused)
                assert answer.kind not in ('', 'InputTooLargeError')
            else:
                assert str(answer) == str(len(text))  # the model string answers text
