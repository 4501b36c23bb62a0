"""The storage example at its boundary: non-finite numbers, any prefix, paths that cannot be opened."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agentool import AgenToolToolset, InputValidationError, get_injector
from agentool.cli import main
from examples.storage import MEMORY, ListResult, SQLiteStore, StorageDeps, StoreError, create_storage, use_store

NON_FINITE = [
    '{"operation": "write", "key": "k", "data": NaN}',
    '{"operation": "write", "key": "k", "data": 1e400}',
    '{"operation": "write", "key": "k", "data": [1, -Infinity]}',
    '{"operation": "write", "key": "k", "data": {"a": {"b": [Infinity]}}}',
]


@pytest.fixture
async def store() -> AsyncIterator[SQLiteStore]:
    create_storage(replace=True)
    opened = SQLiteStore(MEMORY)
    with use_store(opened):
        yield opened
    await opened.aclose()


@pytest.mark.parametrize('prompt', NON_FINITE)
async def test_non_finite_data_is_the_typed_input_error_on_runs(store: SQLiteStore, prompt: str) -> None:
    # The storage agent's own (lean) run, and the model string's agent (pydantic-ai's graph).
    with pytest.raises(InputValidationError, match='not a JSON number') as caught:
        await create_storage(replace=True).run(prompt, deps=StorageDeps(store=store))
    assert caught.value.details['errors'][0]['loc'] == ['data']
    with pytest.raises(InputValidationError, match='not a JSON number'):
        await Agent('agentool:storage').run(prompt)
    assert not (await store.exists('k')).exists


@pytest.mark.parametrize('prompt', NON_FINITE)
async def test_non_finite_data_is_the_typed_input_error_on_injector_call(store: SQLiteStore, prompt: str) -> None:
    with pytest.raises(InputValidationError, match='not a JSON number'):
        await get_injector().call('storage', prompt)
    with pytest.raises(InputValidationError, match='not a JSON number'):
        await get_injector().call('storage', {'operation': 'write', 'key': 'k', 'data': [float('nan')]})
    assert not (await store.exists('k')).exists


def test_non_finite_data_is_the_typed_input_error_on_the_cli(
    store: SQLiteStore, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv('AGENTOOL_STORAGE_PATH', str(tmp_path / 'cli.sqlite3'))
    for prompt in NON_FINITE:
        assert main(['--import', 'examples.storage', 'call', 'storage', prompt]) == 1
        err = capsys.readouterr().err
        assert err.startswith("agentool: error: invalid input for agentool 'storage' operation 'write': field 'data'")
        assert 'not a JSON number' in err
    assert not (tmp_path / 'cli.sqlite3').exists()  # refused before the store was opened


async def test_non_finite_data_is_refused_through_the_llm_toolset(store: SQLiteStore) -> None:
    # An LLM's tool-call arguments are JSON text, which pydantic-ai's parser reads `NaN` and `1e400` in.
    # (An MCP client cannot send one: JSON clients write a non-finite float as null.)
    answers: list[str] = []

    def llm(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart('storage_write', '{"key": "k", "data": [1e400, NaN]}')])
        answers.extend(str(part.content) for part in messages[-1].parts if isinstance(part, ToolReturnPart))
        return ModelResponse(parts=[TextPart('done')])

    agent = Agent(FunctionModel(llm), toolsets=[AgenToolToolset()])
    assert (await agent.run('go')).output == 'done'
    assert len(answers) == 1
    assert 'not a JSON number' in answers[0]
    assert not (await store.exists('k')).exists


KEYS = [
    'a',
    'a\x00',
    'a\x00b',
    'a\x00c',
    'a\x01',
    'ab',
    'a%',
    'a_',
    'A',
    '\ud7ffz',
    '\ue000',
    '\U0010ffff',
    '\U0010ffffx',
]


@pytest.mark.parametrize('prefix', ['', 'a', 'a\x00', 'a\x00b', '\x00', '%', 'a_', '\ud7ff', '\U0010ffff', 'zzz'])
async def test_list_by_prefix_is_exact_for_any_prefix(prefix: str) -> None:
    store = SQLiteStore(MEMORY)
    for key in KEYS:
        await store.write(key, 1)
    listed = await store.list(prefix)
    assert listed.keys == sorted(key for key in KEYS if key.startswith(prefix))
    await store.aclose()


async def test_list_by_a_prefix_holding_nul_through_the_agent(store: SQLiteStore) -> None:
    for key in ('a\x00b', 'a\x00c', 'ab'):
        await store.write(key, 1)
    agent = create_storage(replace=True)
    listed = (
        await agent.run(json.dumps({'operation': 'list', 'prefix': 'a\x00'}), deps=StorageDeps(store=store))
    ).output
    assert isinstance(listed, ListResult)
    assert listed.keys == ['a\x00b', 'a\x00c']


def unopenable_paths(tmp_path: Path) -> list[Path]:
    directory = tmp_path / 'a-directory'
    directory.mkdir()
    afile = tmp_path / 'a-file'
    afile.write_text('')
    return [Path('/dev/null/x.db'), Path('/proc/nope/x.db'), directory, afile / 'x.db']


async def test_every_path_that_cannot_be_opened_is_a_store_error_naming_it(tmp_path: Path) -> None:
    for path in unopenable_paths(tmp_path):
        store = SQLiteStore(path)
        with pytest.raises(StoreError) as caught:
            await store.write('k', 1)
        assert caught.value.details['path'] == str(path)
        assert caught.value.details['operation'] == 'write'
        assert str(path) in str(caught.value)
        await store.aclose()


@pytest.mark.skipif(sys.platform == 'win32' or os.geteuid() == 0, reason='root (or Windows) ignores the mode')
async def test_a_directory_without_permission_is_a_store_error(tmp_path: Path) -> None:
    locked = tmp_path / 'locked'
    locked.mkdir(mode=0o500)
    path = locked / 'sub' / 'x.db'
    store = SQLiteStore(path)
    with pytest.raises(StoreError) as caught:
        await store.read('k')
    assert caught.value.details == {
        'path': str(path),
        'operation': 'read',
        'sqlite_error': None,
        'os_error': 'PermissionError',
    }
    await store.aclose()


async def test_an_unopenable_store_is_a_store_error_through_the_agent(tmp_path: Path) -> None:
    create_storage(replace=True)
    store = SQLiteStore('/dev/null/x.db')
    with pytest.raises(StoreError, match=r'/dev/null/x\.db'):
        await get_injector().call('storage', {'operation': 'read', 'key': 'k'}, deps=StorageDeps(store=store))
    await store.aclose()
