"""The engine-agnostic part of durability: which calls become units, and per-route options.

Outside an engine's workflow the units run inline, so these tests need no engine running.
"""

from __future__ import annotations

from typing import Any, Literal

import pytest
from pydantic import BaseModel
from pydantic_ai import ApprovalRequired, CallDeferred
from pydantic_ai.durable_exec import JSON_CODEC

from agentool import ConfigurationError, OutputError, Route, RoutingConfig, create_agentool, get_injector, get_registry
from agentool.durable import AgenToolDurability, typed_result, unit_key
from tests.durable_agentools import LedgerResult, build
from tests.durable_store import CALLS, create_store

ATTEMPTS: list[str] = []


class FlakyInput(BaseModel):
    operation: Literal['fetch']
    key: str


class RelayInput(BaseModel):
    operation: Literal['relay']
    key: str
    deps: bool = False


async def flaky_fetch(key: str) -> str:
    """Fails on the first two attempts for a key."""
    ATTEMPTS.append(key)
    if ATTEMPTS.count(key) <= 2:
        raise ConnectionError(f'attempt {ATTEMPTS.count(key)} for {key} failed')
    return f'value of {key}'


async def relay_fetch(key: str, deps: bool) -> str:
    """Fetches through the injector: the fetch is its own unit, retried there (unless it is given deps)."""
    data = {'operation': 'fetch', 'key': key}
    return await (get_injector().call('flaky', data, deps={}) if deps else get_injector().call('flaky', data))


def _create(*, retries: int, idempotent: bool = True, durable: bool = True) -> None:
    ATTEMPTS.clear()
    create_agentool(
        name='flaky',
        input_schema=FlakyInput,
        routing_config=RoutingConfig(
            operation_map={'fetch': Route(tool='flaky_fetch', idempotent=idempotent, retries=retries)}
        ),
        tools=[flaky_fetch],
        output_type=str,
        capabilities=[AgenToolDurability()] if durable else [],
        replace=True,
    )
    create_agentool(
        name='relay',
        input_schema=RelayInput,
        # Orchestration: runs in the workflow, and the fetch it makes is the unit.
        routing_config=RoutingConfig(operation_map={'relay': Route(tool='relay_fetch', durable=False)}),
        tools=[relay_fetch],
        output_type=str,
        dependencies=['flaky'],
        capabilities=[AgenToolDurability()] if durable else [],
        replace=True,
    )


async def test_a_durable_run_retries_an_idempotent_operation_in_its_unit() -> None:
    _create(retries=2)
    result = await get_injector().run('flaky', {'operation': 'fetch', 'key': 'a'})
    assert result.output == 'value of a'
    assert ATTEMPTS == ['a', 'a', 'a']


async def test_calls_through_the_injector_in_a_durable_run_are_units_with_the_routes_retries() -> None:
    _create(retries=2)
    result = await get_injector().run('relay', {'operation': 'relay', 'key': 'b'})
    assert result.output == 'value of b'
    assert ATTEMPTS == ['b', 'b', 'b']


async def test_an_injector_call_with_explicit_deps_is_not_a_unit() -> None:
    # The guide: `injector.call` made by workflow code is a unit (retried by its route), except with `deps=`.
    _create(retries=2)
    with pytest.raises(ConnectionError, match='attempt 1 for r failed'):
        await get_injector().run('relay', {'operation': 'relay', 'key': 'r', 'deps': True})
    assert ATTEMPTS == ['r']


async def test_retries_run_out_and_the_tools_own_exception_propagates() -> None:
    _create(retries=1)
    with pytest.raises(ConnectionError, match='attempt 2 for c failed'):
        await get_injector().run('flaky', {'operation': 'fetch', 'key': 'c'})
    assert ATTEMPTS == ['c', 'c']


async def test_without_durability_nothing_is_retried() -> None:
    _create(retries=2, durable=False)
    with pytest.raises(ConnectionError, match='attempt 1 for d failed'):
        await get_injector().run('flaky', {'operation': 'fetch', 'key': 'd'})
    with pytest.raises(ConnectionError, match='attempt 2 for d failed'):
        await get_injector().call('flaky', {'operation': 'fetch', 'key': 'd'})


def test_retries_need_an_idempotent_route() -> None:
    with pytest.raises(ConfigurationError, match=r"operation 'fetch' has retries=2") as raised:
        _create(retries=2, idempotent=False)
    assert [p['kind'] for p in raised.value.details['problems']] == ['retries_not_idempotent']


def test_operation_data_and_results_survive_a_json_journal() -> None:
    # Engines that journal JSON (and Temporal's payload converter) hand a unit's result back as data:
    # the dispatcher makes it the agentool's output type again.
    build()
    arguments = {'agentool': 'ledger', 'operation': 'append', 'input': '{"entry":"k"}', 'via': 'tool', 'retries': 0}
    assert JSON_CODEC.load(dict[str, Any], JSON_CODEC.dump(dict[str, Any], arguments)) == arguments
    manager = get_registry().get_manager('ledger')
    journaled = JSON_CODEC.load(Any, JSON_CODEC.dump(Any, LedgerResult(entry='k', seq=1)))
    assert journaled == {'entry': 'k', 'seq': 1}
    input = manager.validate_python({'operation': 'append', 'entry': 'k'})
    assert typed_result(manager, input, journaled) == LedgerResult(entry='k', seq=1)
    with pytest.raises(OutputError):
        typed_result(manager, input, {'entry': 'k'})


@pytest.mark.parametrize(
    ('options', 'option'),
    [({'registry': 'r'}, 'registry'), ({'unit_key': 'k'}, 'unit_key'), ({'id': 5}, 'id')],
)
def test_options_are_checked_at_construction_naming_the_option(options: dict[str, Any], option: str) -> None:
    with pytest.raises(ConfigurationError, match=f'{option} must be') as caught:
        AgenToolDurability(**options)
    assert caught.value.details == {'option': option, 'value': repr(options[option])}


def test_the_guides_route_example() -> None:
    assert Route(tool='storage_read').durable
    assert not Route(tool='order_place', durable=False).durable
    assert unit_key() is None


@pytest.mark.parametrize(
    ('prompt', 'output'),
    [
        ({'operation': 'write', 'key': 'k', 'data': 1}, 'wrote k=1'),
        ({'operation': 'secret', 'token': 's3cr3t'}, 's3cr3t'),
        ({'operation': 'parse', 'payload': '{"a": 1}'}, '{"a": 1}'),
        ({'operation': 'hidden', 'note': 'given'}, 'given'),
    ],
    ids=['plain', 'secret', 'json-field', 'excluded-field'],
)
async def test_a_durable_unit_gets_the_input_the_plain_agentool_gets(prompt: dict[str, Any], output: str) -> None:
    # The unit's input travels as JSON text; the tool must still see the value the caller gave.
    create_store('plain_store')
    create_store('durable_store', durable=True)
    assert (await get_injector().run('plain_store', prompt)).output == output
    assert (await get_injector().run('durable_store', prompt)).output == output


@pytest.mark.parametrize(('operation', 'raised'), [('ask', ApprovalRequired), ('defer', CallDeferred)])
async def test_a_deferral_is_not_retried_as_a_failure(operation: str, raised: type[Exception]) -> None:
    # `Route(retries=...)` retries unexpected exceptions; asking for approval or deferring is not one.
    create_store('durable_store', durable=True)
    with pytest.raises(raised):
        await get_injector().run('durable_store', {'operation': operation, 'key': 'x'})
    assert [f'{operation} x'] == CALLS


def test_typed_result_passes_an_in_process_result_as_it_is() -> None:
    create_store()
    manager = get_registry().get_manager('store')
    input = manager.validate_python({'operation': 'write', 'key': 'k'})
    assert typed_result(manager, input, 'wrote k=0') == 'wrote k=0'
