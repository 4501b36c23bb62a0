"""The assistant example: an LLM agent using storage's operations as tools, run offline."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic_ai.messages import ToolReturnPart
from pydantic_ai.models import override_allow_model_requests
from pydantic_ai.models.test import TestModel

from agentool import AgenToolRegistry
from agentool.testing import AgentDouble
from examples.assistant import INSTRUCTIONS, MODEL_ENV, NOTE_KEY, create_assistant, model_from_env
from examples.storage import MEMORY, PATH_ENV, SQLiteStore, StorageDeps, StoreError, use_store
from tests.agentools import ROOT

TOOLS = ['storage_read', 'storage_write', 'storage_list', 'storage_delete', 'storage_exists']


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No model setting from the environment, and no request to a real model possible."""
    monkeypatch.delenv(MODEL_ENV, raising=False)
    with override_allow_model_requests(False):
        yield


async def test_the_offline_model_writes_then_reads_through_the_storage_tools(store: SQLiteStore) -> None:
    assistant = create_assistant()
    double = assistant.model
    assert isinstance(double, AgentDouble)
    result = await assistant.run('Remember the milk.', deps=StorageDeps(store=store))
    assert result.output == f'Noted under {NOTE_KEY!r}: Remember the milk.'
    assert (await store.read(NOTE_KEY)).data == 'Remember the milk.'  # really written, durably
    double.calls.assert_order('storage_write', 'storage_read')
    double.calls.assert_called('storage_write', {'key': NOTE_KEY, 'data': 'Remember the milk.'}, times=1)
    request = double.requests[0]
    assert request.instructions == INSTRUCTIONS
    assert request.tool_names == TOOLS


async def test_a_run_without_deps_uses_the_enclosing_store(store: SQLiteStore) -> None:
    with use_store(store):
        await create_assistant().run('Buy bread.')
    assert (await store.read(NOTE_KEY)).data == 'Buy bread.'


def test_creating_the_assistant_registers_storage_when_missing(registry: AgenToolRegistry) -> None:
    assert 'storage' not in registry
    create_assistant()
    assert registry.list_names() == ['storage']


async def test_a_tool_failure_propagates_unchanged(store: SQLiteStore) -> None:
    await store.aclose()
    with pytest.raises(StoreError, match='closed'):
        await create_assistant().run('Anything.', deps=StorageDeps(store=store))


def test_the_model_is_offline_unless_the_environment_names_one(monkeypatch: pytest.MonkeyPatch) -> None:
    assert isinstance(model_from_env(), AgentDouble)
    monkeypatch.setenv(MODEL_ENV, '  ')
    assert isinstance(model_from_env(), AgentDouble)
    monkeypatch.setenv(MODEL_ENV, 'openai:gpt-5')
    assert model_from_env() == 'openai:gpt-5'


async def test_a_model_named_in_the_environment_is_used(monkeypatch: pytest.MonkeyPatch, store: SQLiteStore) -> None:
    monkeypatch.setenv(MODEL_ENV, 'test')  # pydantic-ai's TestModel: a real model name that needs no network
    assistant = create_assistant()
    assert isinstance(assistant.model, TestModel)
    result = await assistant.run('Remember anything.', deps=StorageDeps(store=store))
    called = {part.tool_name for m in result.all_messages() for part in m.parts if isinstance(part, ToolReturnPart)}
    assert called == set(TOOLS)  # TestModel calls every tool once; each really ran against the store


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {PATH_ENV, MODEL_ENV, 'XDG_DATA_HOME'}}
    env |= {'PYTHONPATH': os.pathsep.join(filter(None, [str(ROOT), env.get('PYTHONPATH')])), 'HOME': str(home)}
    return env | extra


def _run(home: Path, args: list[str], **env: str) -> str:
    """What a fresh interpreter printed, run in `home` (it must exit cleanly and leave `home` empty)."""
    done = subprocess.run(
        [sys.executable, *args], cwd=home, env=_env(home, **env), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert list(home.iterdir()) == []
    return done.stdout


def test_importing_builds_and_runs_nothing(tmp_path: Path) -> None:
    # A model name that cannot be resolved: importing must not try to.
    code = 'import examples.assistant; from agentool import get_registry; print(get_registry().list_names())'
    assert _run(tmp_path, ['-c', code], **{MODEL_ENV: 'nowhere:no-model'}).strip() == "['storage']"


def test_running_the_module_answers_offline(tmp_path: Path) -> None:
    out = _run(tmp_path, ['-m', 'examples.assistant', 'Remember', 'the', 'milk.'], **{PATH_ENV: MEMORY})
    assert out.splitlines() == ["Noted under 'note': Remember the milk.", 'stored in :memory:']
