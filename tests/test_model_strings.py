"""`Agent('agentool:NAME')`: the model-string hook, its explicit form, and deps in both."""

from __future__ import annotations

from typing import Any, Literal

import pydantic_ai.models
import pytest
from pydantic_ai import Agent, ModelRetry, RunContext, ToolFailed
from pydantic_ai.models.test import TestModel

from agentool import (
    AgenToolCapability,
    AgenToolError,
    AgenToolModel,
    AgenToolNotFoundError,
    BaseOperationInput,
    ConfigurationError,
    DepsUnavailableError,
    RoutingConfig,
    ToolFailedError,
    ToolRetryError,
    create_agentool,
    get_injector,
    model_strings,
)
from examples.calculator import create_calculator


class GreetInput(BaseOperationInput):
    operation: Literal['greet']
    name: str


async def greet(ctx: RunContext[dict[str, str]], name: str) -> str:
    return f'{ctx.deps["greeting"]}, {name}'


def _greeter() -> Agent[Any, Any]:
    return create_agentool(
        'greeter', GreetInput, RoutingConfig(operation_map={'greet': 'greet'}), [greet], deps_type=dict[str, str]
    )


def test_canary_agent_resolves_model_strings_through_infer_model() -> None:
    """Fails loudly if pydantic-ai stops resolving `Agent(str)` through `pydantic_ai.models.infer_model`."""
    assert model_strings.is_installed()
    agent = Agent('agentool:anything')
    assert isinstance(agent.model, AgenToolModel)
    assert agent.model.model_name == 'anything'


def test_install_is_idempotent_chains_and_can_be_undone() -> None:
    wrapped = pydantic_ai.models.infer_model
    model_strings.install()
    assert pydantic_ai.models.infer_model is wrapped
    assert isinstance(pydantic_ai.models.infer_model('test'), TestModel)  # chains to the original
    try:
        model_strings.uninstall()
        assert not model_strings.is_installed()
        model_strings.uninstall()
        with pytest.raises(pydantic_ai.exceptions.UserError):
            Agent('agentool:calculator')
    finally:
        model_strings.install()
    assert model_strings.is_installed()


async def test_unknown_agentool_fails_at_run_with_a_suggestion() -> None:
    create_calculator()
    agent = Agent('agentool:calculater')
    with pytest.raises(AgenToolNotFoundError, match="did you mean 'calculator'"):
        await agent.run('{"operation": "add", "a": 1, "b": 2}')


async def test_agentool_registered_after_the_agent_is_built_is_found() -> None:
    agent = Agent('agentool:calculator', output_type=float)
    create_calculator()
    assert (await agent.run('{"operation": "add", "a": 1, "b": 2}')).output == 3.0


async def test_plain_form_tool_reading_deps_fails_clearly() -> None:
    _greeter()
    with pytest.raises(DepsUnavailableError, match=r'AgenToolCapability\(.greeter.\)') as caught:
        await Agent('agentool:greeter').run('{"operation": "greet", "name": "Ada"}')
    assert caught.value.agentool == 'greeter'


async def test_plain_form_without_a_deps_type_gives_none_as_every_surface_does() -> None:
    async def peek(ctx: RunContext[None], name: str) -> str:
        return f'{ctx.deps!r} {name}'

    create_agentool('peeker', GreetInput, RoutingConfig(operation_map={'greet': 'peek'}), [peek])
    prompt = '{"operation": "greet", "name": "Ada"}'
    assert (await Agent('agentool:peeker', output_type=str).run(prompt)).output == 'None Ada'
    assert await get_injector().call('peeker', prompt) == 'None Ada'


async def test_explicit_capability_form_carries_deps() -> None:
    _greeter()
    agent = Agent(AgenToolModel('greeter'), capabilities=[AgenToolCapability('greeter')], deps_type=dict[str, str])
    result = await agent.run('{"operation": "greet", "name": "Ada"}', deps={'greeting': 'Hello'})
    assert result.output == 'Hello, Ada'


async def test_explicit_capability_resolves_its_model_id_without_the_hook() -> None:
    _greeter()
    model_strings.uninstall()
    try:
        agent = Agent('agentool:greeter', capabilities=[AgenToolCapability('greeter')], deps_type=dict[str, str])
        result = await agent.run('{"operation": "greet", "name": "Bo"}', deps={'greeting': 'Hi'})
    finally:
        model_strings.install()
    assert result.output == 'Hi, Bo'
    other = Agent('agentool:other', capabilities=[AgenToolCapability('greeter')])
    with pytest.raises(ConfigurationError, match='names a different agentool'):
        await other.run('{"operation": "greet", "name": "Bo"}')


async def test_explicit_capability_streams() -> None:
    _greeter()
    agent = Agent('agentool:greeter', capabilities=[AgenToolCapability('greeter')], deps_type=dict[str, str])
    async with agent.run_stream('{"operation": "greet", "name": "Cy"}', deps={'greeting': 'Yo'}) as stream:
        assert await stream.get_output() == 'Yo, Cy'


async def test_deps_reach_tools_through_the_created_agent() -> None:
    greeter = _greeter()
    assert (await greeter.run('{"operation": "greet", "name": "Di"}', deps={'greeting': 'Hey'})).output == 'Hey, Di'


async def test_created_agent_and_plain_agent_agree() -> None:
    calculator = create_calculator()
    prompt = '{"operation": "subtract", "a": 10, "b": 4.5}'
    typed = await calculator.run(prompt)
    plain = await Agent('agentool:calculator', output_type=float).run(prompt)
    assert typed.output == plain.output == 5.5


async def test_agent_override_swaps_the_model_for_a_test_double() -> None:
    calculator = create_calculator()
    with calculator.override(model=TestModel(call_tools=[], custom_output_args=99.0)):
        assert (await calculator.run('{"operation": "add", "a": 1, "b": 2}')).output == 99.0
    assert (await calculator.run('{"operation": "add", "a": 1, "b": 2}')).output == 3.0


class FlakyInput(BaseOperationInput):
    operation: Literal['retry', 'fail']


async def asks_retry() -> int:
    raise ModelRetry('again')


async def fails() -> int:
    raise ToolFailed('nope')


@pytest.mark.parametrize(
    ('operation', 'error', 'feedback'), [('retry', ToolRetryError, 'again'), ('fail', ToolFailedError, 'nope')]
)
async def test_a_tools_retry_or_failure_ends_every_form_with_the_same_typed_error(
    operation: str, error: type[AgenToolError], feedback: str
) -> None:
    # The plain form used to send the retry text back as the next prompt (InvalidJSONError) and let
    # ToolFailed escape untyped.
    routing = RoutingConfig(operation_map={'retry': 'asks_retry', 'fail': 'fails'})
    created = create_agentool('flaky', FlakyInput, routing, [asks_retry, fails])
    prompt = f'{{"operation": "{operation}"}}'
    forms: list[Agent[Any, Any]] = [
        created,
        Agent('agentool:flaky', output_type=int),
        Agent('agentool:flaky', output_type=int, capabilities=[AgenToolCapability('flaky')]),
    ]
    messages: list[str] = []
    for agent in forms:
        with pytest.raises(error) as caught:
            await agent.run(prompt)
        assert caught.value.details['agentool'] == 'flaky'
        assert feedback in caught.value.details['feedback']
        messages.append(str(caught.value))
    assert len(set(messages)) == 1, messages
