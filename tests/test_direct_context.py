"""The `RunContext` a tool gets on the direct path (`injector.call`) behaves like one built normally."""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

import pytest
from pydantic_ai import RunContext
from pydantic_ai.usage import RunUsage

from agentool import BaseOperationInput, RoutingConfig, create_agentool, get_injector
from agentool._compat import PYDANTIC_AI_VERSION


class PeekInput(BaseOperationInput):
    operation: Literal['peek']


seen: list[RunContext[Any]] = []


async def peek(ctx: RunContext[Any]) -> str:
    seen.append(ctx)
    return 'seen'


async def test_the_direct_context_is_a_run_context_of_its_own_per_call() -> None:
    agent = create_agentool('peek', PeekInput, RoutingConfig(operation_map={'peek': 'peek'}), [peek])
    seen.clear()
    await get_injector().call('peek', '{"operation": "peek"}', deps='one')
    first = seen[-1]
    assert isinstance(first, RunContext)
    assert (first.deps, first.prompt, first.agent, first.tool_name) == (
        'one',
        '{"operation": "peek"}',
        agent,
        '__agentool_manager__',
    )
    assert first.model is agent.model
    assert first.usage == RunUsage()
    assert (first.retry, first.messages, first.run_step) == (0, [], 0)
    assert repr(first).startswith('RunContext(deps=')
    # Mutating one context (as a tool may) changes no other, and not the next call's.
    first.model = 'changed'  # type: ignore[assignment]
    first.usage.requests = 3
    await get_injector().call('peek', '{"operation": "peek"}', deps='two')
    second = seen[-1]
    assert second is not first
    assert second.model is agent.model
    assert second.usage == RunUsage()
    assert second.deps == 'two'
    # `dataclasses.replace` (what pydantic-ai and tools use to derive a context) keeps every field.
    derived = dataclasses.replace(second, deps='three')
    assert isinstance(derived, RunContext)
    assert (derived.deps, derived.model, derived.agent, derived.prompt) == (
        'three',
        agent.model,
        agent,
        second.prompt,
    )


def test_canary_run_context_fields_the_direct_and_lean_paths_set() -> None:
    # agentool's direct path (agentool/core/request/_context.py) and lean runs (agentool/core/agent/lean.py) build a
    # `RunContext` from its dataclass fields; a rename in pydantic-ai would leave a tool reading a default.
    try:
        names = {field.name for field in dataclasses.fields(RunContext)}
    except TypeError as error:
        pytest.fail(f'pydantic-ai {PYDANTIC_AI_VERSION}: RunContext is no longer a dataclass: {error}')
    needed = {'deps', 'model', 'prompt', 'agent', 'tool_name', 'usage', 'run_id', 'conversation_id'}
    needed |= {'tool_call_id', 'messages', 'run_step', 'max_retries'}
    missing = needed - names
    assert not missing, f'pydantic-ai {PYDANTIC_AI_VERSION}: RunContext lost the fields {sorted(missing)}'
