"""An LLM agent whose tools are the storage agentool's operations, through `AgenToolToolset`.

The agent gets one tool per storage operation (`storage_read`, `storage_write`, `storage_list`,
`storage_delete`, `storage_exists`), each taking exactly that operation's arguments, checked
against storage's own input schema.

**Model.** Offline by default: a scripted `AgentDouble` (from `agentool.testing`) plays the LLM. It
saves the user's message under the key `note`, reads it back and answers; deterministic, with no
network and no API key. To use a real model, set `AGENTOOL_ASSISTANT_MODEL` to a pydantic-ai model
name, e.g. `AGENTOOL_ASSISTANT_MODEL=openai:gpt-5`, with that provider's package installed
(`pip install 'pydantic-ai-slim[openai]'`) and its key set (`OPENAI_API_KEY`). Never required.

**Storage.** The tools use the run's deps (`deps=StorageDeps(store=...)`); a run without deps uses
the store of the enclosing `use_store(...)` block, else the embedded default store (see
`examples.storage`).

Importing this module registers the storage agentool (by importing `examples.storage`) and nothing
else: no agent is built or run and no model is resolved until `create_assistant()` is called.

Run it: `python -m examples.assistant "Remember that the meeting is at 3pm."` (it stores the note
in `examples.storage.default_path()`; set `AGENTOOL_STORAGE_PATH=:memory:` to keep nothing).
"""

from __future__ import annotations

import os
import sys

from pydantic_ai import Agent
from pydantic_ai.models import Model

from agentool import AgenToolToolset, get_registry
from agentool.testing import AgentDouble, Call, OutputFrom, Script, ScriptRun
from examples.storage import ReadResult, StorageDeps, create_storage, default_path

__all__ = ('INSTRUCTIONS', 'MODEL_ENV', 'NOTE_KEY', 'create_assistant', 'model_from_env', 'offline_model')

MODEL_ENV = 'AGENTOOL_ASSISTANT_MODEL'
"""Environment variable naming a real pydantic-ai model (`provider:model`); unset means offline."""

NOTE_KEY = 'note'
"""Where the offline model keeps the note."""

INSTRUCTIONS = (
    'You are a note-taking assistant with a durable key-value store. Save what the user asks you to '
    'remember with storage_write, look things up with storage_read or storage_list, and answer briefly.'
)


def _answer(run: ScriptRun) -> str:
    read: ReadResult = run.result('storage_read')  # the tool's own typed output
    return f'Noted under {NOTE_KEY!r}: {read.data}'


def offline_model() -> AgentDouble:
    """The deterministic stand-in for an LLM: write the prompt as the note, read it back, answer."""
    return AgentDouble(
        Script(
            Call('storage_write', lambda run: {'key': NOTE_KEY, 'data': run.prompt}),
            Call('storage_read', {'key': NOTE_KEY}),
            OutputFrom(_answer),
        ),
        name='offline-assistant',
    )


def model_from_env() -> Model | str:
    """The model named by `$AGENTOOL_ASSISTANT_MODEL`, else a fresh `offline_model()`."""
    return os.environ.get(MODEL_ENV, '').strip() or offline_model()


def create_assistant(model: Model | str | None = None) -> Agent[StorageDeps | None, str]:
    """The assistant agent, with the storage operations as its tools.

    Args:
        model: The model; by default `model_from_env()` (offline unless `$AGENTOOL_ASSISTANT_MODEL` is set).
    """
    if 'storage' not in get_registry():
        create_storage()
    # The toolset selects from the registry in effect now, so storage must be registered first.
    return Agent(
        model_from_env() if model is None else model,
        deps_type=StorageDeps,
        toolsets=[AgenToolToolset(include=['storage'])],
        instructions=INSTRUCTIONS,
        name='assistant',
    )


def main() -> None:
    """Entry point for `python -m examples.assistant [MESSAGE]`."""
    prompt = ' '.join(sys.argv[1:]) or 'Remember that the assistant example ran.'
    print(create_assistant().run_sync(prompt).output)
    print(f'stored in {default_path()}')


if __name__ == '__main__':
    main()
