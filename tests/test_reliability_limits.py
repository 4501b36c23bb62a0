"""The maximum prompt size (`max_input_bytes`): 1 MiB by default, counted in UTF-8 bytes, enforced
before any parsing on every surface (the agent, the plain and explicit `Agent('agentool:NAME')`
forms, streaming, the injector's run and direct call), with a typed error.
"""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable
from typing import Any, Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic_ai import Agent

from agentool import (
    AgenToolCapability,
    AgenToolError,
    BaseOperationInput,
    InputTooLargeError,
    InvalidInputError,
    RoutingConfig,
    create_agentool,
    get_injector,
    get_registry,
    use_registry,
)

HEAVY = os.environ.get('AGENTOOL_FUZZ') == '1'
"""`make fuzz`: more examples."""

MIB = 1024 * 1024

Surface = Callable[[str], Awaitable[Any]]


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


def surfaces(agent: Agent[Any, int], name: str = 'echo') -> dict[str, Surface]:
    """Every way to hand agentool `name` a prompt."""

    async def run(prompt: str) -> Any:
        return (await agent.run(prompt)).output

    async def plain(prompt: str) -> Any:
        return (await Agent(f'agentool:{name}', output_type=int).run(prompt)).output

    async def explicit(prompt: str) -> Any:
        explicit_agent = Agent(f'agentool:{name}', output_type=int, capabilities=[AgenToolCapability(name)])
        return (await explicit_agent.run(prompt)).output

    async def stream(prompt: str) -> Any:
        async with agent.run_stream(prompt) as result:
            return await result.get_output()

    async def injector_run(prompt: str) -> Any:
        return (await get_injector().run(name, prompt)).output

    async def injector_call(prompt: str) -> Any:
        return await get_injector().call(name, prompt)

    return {
        'agent.run': run,
        'plain Agent': plain,
        'explicit Agent': explicit,
        'run_stream': stream,
        'injector.run': injector_run,
        'injector.call': injector_call,
    }


SURFACES = ['agent.run', 'plain Agent', 'explicit Agent', 'run_stream', 'injector.run', 'injector.call']


def prompt_of_size(n_bytes: int, char: str = 'x') -> str:
    """A valid echo prompt of exactly `n_bytes` UTF-8 bytes (`char` must be one byte)."""
    frame = '{"operation": "echo", "text": ""}'
    return frame[:-2] + char * (n_bytes - len(frame)) + '"}'


@pytest.fixture(autouse=True)
def clear_calls() -> None:
    CALLS.clear()


@pytest.mark.parametrize('surface', SURFACES)
async def test_default_limit_is_one_mebibyte_inclusive(surface: str) -> None:
    call = surfaces(create_echo())[surface]
    assert get_registry().require('echo').max_input_bytes == MIB
    at_limit = prompt_of_size(MIB)
    assert len(at_limit.encode()) == MIB
    assert await call(at_limit) == MIB - len('{"operation": "echo", "text": ""}')
    with pytest.raises(InputTooLargeError) as caught:
        await call(prompt_of_size(MIB + 1))
    assert caught.value.details == {'agentool': 'echo', 'size': MIB + 1, 'limit': MIB}
    assert 'max_input_bytes' in caught.value.message
    assert len(CALLS) == 1  # the refused prompt never reached the tool


@pytest.mark.parametrize('surface', SURFACES)
async def test_a_configured_limit_counts_utf8_bytes(surface: str) -> None:
    call = surfaces(create_echo(max_input_bytes=64))[surface]
    ascii_text = json.dumps({'operation': 'echo', 'text': 'e' * 20})  # 45 bytes
    accented = json.dumps({'operation': 'echo', 'text': 'é' * 20}, ensure_ascii=False)  # 45 characters, 65 bytes
    assert len(accented) < 64 < len(accented.encode())
    assert await call(ascii_text) == 20
    with pytest.raises(InputTooLargeError) as caught:
        await call(accented)
    assert caught.value.details['size'] == len(accented.encode())


BAD_AND_BIG = {
    'invalid JSON': '{"operation": "echo", "text": "' + 'x' * 200,
    'not an object': json.dumps(['x' * 200]),
    'unknown operation': json.dumps({'operation': 'nope', 'text': 'x' * 200}),
    'extra field': json.dumps({'operation': 'echo', 'junk': 'x' * 200}),
    'deep nesting': '{"operation": "echo", "text": ' + '[' * 10_000 + ']' * 10_000 + '}',
}


@pytest.mark.parametrize('surface', SURFACES)
@pytest.mark.parametrize('kind', list(BAD_AND_BIG))
async def test_size_is_checked_before_parsing(surface: str, kind: str) -> None:
    """Whatever else is wrong with an oversized prompt, the size is what is reported: nothing was parsed."""
    call = surfaces(create_echo(max_input_bytes=128))[surface]
    with pytest.raises(InputTooLargeError):
        await call(BAD_AND_BIG[kind])
    assert CALLS == []


async def test_the_error_is_a_typed_invalid_input_error() -> None:
    create_echo(max_input_bytes=10)
    with pytest.raises(InputTooLargeError) as caught:
        await get_injector().call('echo', '{"operation": "echo"}')
    assert isinstance(caught.value, InvalidInputError)
    assert isinstance(caught.value, AgenToolError)
    assert isinstance(caught.value, ValueError)


async def test_each_agentool_has_its_own_limit() -> None:
    small, large = (
        surfaces(create_echo('small', max_input_bytes=50), 'small'),
        surfaces(create_echo('large', max_input_bytes=500), 'large'),
    )
    prompt = prompt_of_size(100)
    for surface in SURFACES:
        with pytest.raises(InputTooLargeError):
            await small[surface](prompt)
        assert await large[surface](prompt) == 100 - len('{"operation": "echo", "text": ""}')


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
        agent = create_echo(max_input_bytes=limit)
        prompt = json.dumps({'operation': 'echo', 'text': text}, ensure_ascii=False)
        size = len(prompt.encode('utf-8', errors='surrogatepass'))  # a lone surrogate counts as its 3 bytes
        surrogates = any(0xD800 <= ord(c) <= 0xDFFF for c in text)  # not valid UTF-8 text: a typed refusal
        for surface in ('plain Agent', 'injector.call'):
            call = surfaces(agent)[surface]
            if size > limit:
                with pytest.raises(InputTooLargeError):
                    await call(prompt)
            elif surrogates:
                with pytest.raises(InvalidInputError) as caught:
                    await call(prompt)
                assert not isinstance(caught.value, InputTooLargeError)
            else:
                assert await call(prompt) == len(text)
