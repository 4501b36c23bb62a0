"""`use_registry()`: a fresh registry per block, task-local, restored on exit; the default otherwise."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from agentool import AgenToolRegistry, create_agentool, get_registry, use_registry
from examples.calculator import create_calculator
from tests.agentools import EchoInput, echo, echo_routing

ROOT = Path(__file__).resolve().parent.parent


def _fail_in_a_fresh_scope() -> None:
    with use_registry() as innermost:
        assert get_registry() is innermost
        raise RuntimeError('boom')


def test_scope_is_fresh_nested_and_restored_even_on_error(registry: AgenToolRegistry) -> None:
    create_calculator()
    with use_registry() as inner:
        assert get_registry() is inner
        assert inner.list_names() == []
        with pytest.raises(RuntimeError):
            _fail_in_a_fresh_scope()
        assert get_registry() is inner
    assert get_registry() is registry
    assert registry.list_names() == ['calculator']


def test_an_explicit_registry_can_be_reused(registry: AgenToolRegistry) -> None:
    kept = AgenToolRegistry()
    with use_registry(kept):
        create_calculator()
    with use_registry(kept) as again:
        assert again is kept
        assert kept.list_names() == ['calculator']
    assert registry.list_names() == []


async def test_concurrent_tasks_see_only_their_own_registry(registry: AgenToolRegistry) -> None:
    started = asyncio.Event()
    both_registered = asyncio.Barrier(2)

    async def worker(description: str) -> tuple[list[str], str | None, AgenToolRegistry]:
        with use_registry() as mine:
            calculator = create_calculator()  # the same name in both tasks: no DuplicateNameError
            mine.update('calculator', description=description)
            started.set()
            await both_registered.wait()  # both tasks are inside their scopes now
            output = (await calculator.run('{"operation": "add", "a": 1, "b": 1}')).output
            assert output == 2.0
            config = get_registry().require('calculator')
            return get_registry().list_names(), config.description, mine

    (names_a, desc_a, reg_a), (names_b, desc_b, reg_b) = await asyncio.gather(worker('a'), worker('b'))
    assert (names_a, desc_a) == (['calculator'], 'a')
    assert (names_b, desc_b) == (['calculator'], 'b')
    assert reg_a is not reg_b
    assert get_registry() is registry
    assert registry.list_names() == []


async def test_tasks_inherit_the_scope_they_were_created_in(registry: AgenToolRegistry) -> None:
    create_calculator()

    async def look() -> list[str]:
        return get_registry().list_names()

    assert await asyncio.create_task(look()) == ['calculator']


def test_code_that_never_asks_uses_the_default_registry() -> None:
    code = (
        'from agentool import get_registry, use_registry\n'
        'default = get_registry()\n'
        'import examples.calculator  # registers at import\n'
        'with use_registry() as fresh:\n'
        '    assert fresh.list_names() == []\n'
        'assert get_registry() is default and default.list_names() == ["calculator"]\n'
        'print("ok")\n'
    )
    run = subprocess.run([sys.executable, '-c', code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert run.stdout.strip() == 'ok', run.stderr


async def test_agent_keeps_its_registry_outside_the_scope_and_across_tasks() -> None:
    with use_registry() as inner:
        agent = create_agentool('scoped', EchoInput, echo_routing(), [echo])
    assert 'scoped' in inner
    assert get_registry().get('scoped') is None

    async def run(text: str) -> str:
        return (await agent.run(f'{{"operation": "echo", "text": "{text}"}}')).output

    assert await asyncio.gather(run('a'), run('b')) == ['a', 'b']


async def test_registries_of_concurrent_blocks_do_not_leak() -> None:
    async def make(replace: bool) -> list[str]:
        with use_registry() as fresh:
            create_calculator(replace=replace)
            await asyncio.sleep(0)
            assert get_registry() is fresh
            return fresh.list_names()

    outside = get_registry()
    assert await asyncio.gather(make(False), make(False)) == [['calculator'], ['calculator']]
    assert outside.list_names() == []


def test_a_lookup_a_scope_hides_says_the_scope_hides_it() -> None:
    # A module-level agentool lives in the default registry; a test under `agentool_isolate = true`
    # (a fresh registry and injector) cannot see it, and every not-found error says why.
    code = (
        'import asyncio\n'
        'from agentool import AgenToolInjector, AgenToolNotFoundError, get_injector, get_registry, use_injector\n'
        'from agentool import use_registry\n'
        'import examples.calculator  # registers at import, in the default registry\n'
        'with use_registry() as fresh, use_injector(AgenToolInjector(registry=fresh)):\n'
        '    for lookup in (\n'
        '        lambda: get_registry().require("calculator"),\n'
        '        lambda: asyncio.run(get_injector().call("calculator", {"operation": "add", "a": 1, "b": 2})),\n'
        '    ):\n'
        '        try:\n'
        '            lookup()\n'
        '        except AgenToolNotFoundError as error:\n'
        '            print(error.message)\n'
        'try:\n'
        '    get_registry().require("calculatr")\n'
        'except AgenToolNotFoundError as error:\n'
        '    print(error.message)\n'
    )
    run = subprocess.run([sys.executable, '-c', code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    scoped_registry, scoped_injector, unscoped = run.stdout.strip().splitlines()
    hint = "'calculator' is registered in the default registry, which this scoped one hides"
    assert scoped_registry.startswith("no agentool named 'calculator' is registered; ")
    assert hint in scoped_registry
    assert scoped_injector.startswith("no agent named 'calculator' is registered with the injector")
    assert hint in scoped_injector
    assert 'agentool_isolate = true' in scoped_registry
    assert 'scoped' not in unscoped
    assert "did you mean 'calculator'" in unscoped
