"""Deps errors alike on every surface.

A surface builds deps when its caller gave none: `injector.run`, `injector.call`, handles, the
agent `create_agentool` returns (lean or not) and MCP. Each reports deps that cannot be built with
one and the same `MissingDepsError`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

import pytest
from mcp import Client
from pydantic_ai import RunContext

from agentool import BaseOperationInput, MissingDepsError, RoutingConfig, create_agentool
from agentool.core.agent import AgenToolAgent
from agentool.core.injector import AgenToolInjector, use_injector
from agentool.mcp import create_mcp_server


class WhoInput(BaseOperationInput):
    operation: Literal['who']


PROMPT = '{"operation": "who"}'


def surfaces(injector: AgenToolInjector, agent: AgenToolAgent, name: str) -> dict[str, Callable[[], Awaitable[Any]]]:
    """Every way to get agentool `name`'s output without giving it deps."""

    async def agent_run() -> Any:
        return (await agent.run(PROMPT)).output

    async def injector_run() -> Any:
        return (await injector.run(name, {'operation': 'who'})).output

    async def handle_run() -> Any:
        return (await injector.handle(name).run({'operation': 'who'})).output

    return {
        'agent.run': agent_run,
        'agent.run again': agent_run,  # a later run, which a lean agent could answer without the graph
        'injector.run': injector_run,
        'injector.call': lambda: injector.call(name, {'operation': 'who'}),
        'handle': lambda: injector.handle(name)({'operation': 'who'}),
        'handle.run': handle_run,
    }


@pytest.fixture(params=[True, False], ids=['lean', 'graph'])
def lean(request: pytest.FixtureRequest) -> bool:
    return request.param


# --- deps that cannot be built: one error, alike everywhere -------------------------------------


class Handmade:
    """Neither a dataclass nor a pydantic model, and nothing provides it: the injector cannot build it."""


class Mailer:
    """A resource nobody provides."""


@dataclass
class Notify:
    mailer: Mailer


async def who_handmade(ctx: RunContext[Handmade]) -> str:
    return repr(ctx.deps)


async def who_notify(ctx: RunContext[Notify]) -> str:
    return repr(ctx.deps)


@pytest.mark.parametrize(
    ('deps_type', 'tool', 'named'),
    [(Handmade, who_handmade, {}), (Notify, who_notify, {'field': 'mailer', 'type': 'Mailer'})],
)
async def test_deps_that_cannot_be_built_raise_the_same_error_on_every_surface(
    deps_type: type[Any], tool: Callable[..., Any], named: dict[str, str], lean: bool
) -> None:
    with use_injector() as injector:
        routes = RoutingConfig(operation_map={'who': tool.__name__})
        agent = create_agentool('n', WhoInput, routes, [tool], deps_type=deps_type, lean=lean)
        errors: dict[str, MissingDepsError] = {}
        for surface, run in surfaces(injector, agent, 'n').items():
            with pytest.raises(MissingDepsError) as caught:
                await run()
            errors[surface] = caught.value
        async with Client(create_mcp_server()) as client:  # pyright: ignore[reportArgumentType]
            result = await client.call_tool('n_who', {})
    first = errors['injector.call']
    message = str(first)
    assert message.count(f'declares deps_type {deps_type.__name__}') == 1
    assert message.count('Pass deps=') == 1
    assert first.details['deps_type'] == deps_type.__name__
    assert first.details['reason']
    assert first.details.items() >= named.items()
    for surface, error in errors.items():
        assert (str(error), error.details) == (message, first.details), surface
    assert result.is_error
    assert message in result.content[0].model_dump()['text']
