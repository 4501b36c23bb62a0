"""Durable agentools on DBOS (`pip install 'agentool[dbos]'`): each operation a journaled step.

`durable(name)` builds the agent, `launch()` starts DBOS, `run`/`enqueue` run it as a workflow;
agents are found by name on recovery, so register them before `launch()` (the scaling-out guide).
"""

from __future__ import annotations

import logging
import os
import sqlite3
import sys
import time
from collections.abc import Generator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import anyio.to_thread
from pydantic_ai import RunContext
from pydantic_ai.agent import AbstractAgent
from pydantic_ai.capabilities import AbstractCapability

from ._options import check_instance, check_limit, check_seconds, check_strings, check_text, refuse
from .core.agent.capability import build_agent
from .core.registry import AgenToolRegistry, not_found
from .core.request import dispatching
from .durable import (
    CAPABILITY_ID,
    OPERATION_NAME,
    AgenToolDurability,
    UnitDispatcher,
    Via,
    engine_options,
    missing_extra,
    run_unit,
)
from .errors import ConfigurationError, InvalidInputError
from .paths import user_data_dir

try:
    from dbos import DBOS, DBOSConfig, SetWorkflowID, StepOptions, WorkflowHandleAsync, WorkflowStatus
    from dbos import error as _dbos_errors
    from pydantic_ai.durable_exec import CapabilityOperationId
    from pydantic_ai.durable_exec.dbos import DBOSDurability, DBOSOperationNamer, StepConfig
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError
except ImportError as error:  # pragma: no cover - exercised without the extra
    raise missing_extra('dbos') from error

__all__ = (
    'DATABASE_ENV',
    'QUEUE_NAME',
    'WORKFLOW_NAME',
    'capabilities',
    'database_url',
    'default_database_path',
    'durable',
    'enqueue',
    'launch',
    'recover',
    'register',
    'run',
    'shutdown',
    'unit_key',
)

DATABASE_ENV = 'AGENTOOL_DBOS_DATABASE'
"""Environment variable that sets the default system database (a path or a database URL)."""

WORKFLOW_NAME = 'agentool.run'
"""The persisted name of the workflow `run` and `enqueue` start: never rename it."""

QUEUE_NAME = 'agentool'
"""The DBOS queue `enqueue` puts runs on; every launched process is a worker of it."""

_agents: dict[str, AbstractAgent[Any, Any]] = {}
_answers: dict[str, _Answer] = {}  # by agent name: how `run` answers the agents `durable` built
_OPERATION = CapabilityOperationId(CAPABILITY_ID, operation=OPERATION_NAME)
_launched_with: dict[str, Any] = {}  # the launch in effect; empty before `launch`, after `shutdown`


@contextmanager
def _needs_launch(function: str) -> Generator[None]:
    """DBOS's error for a call before `launch` as a `ConfigurationError` saying what to do."""
    try:
        yield
    except _dbos_errors.DBOSException as error:
        if _launched_with:
            raise
        raise ConfigurationError(
            f'agentool.dbos.{function}() needs DBOS running: call `await agentool.dbos.launch(...)` first '
            f'(DBOS said: {error})',
            reason='not_launched',
        ) from error


def unit_key() -> str | None:
    """DBOS's identity of the step running now (`workflow id:step id`), `None` outside a step."""
    workflow_id, step_id = DBOS.workflow_id, DBOS.step_id
    return None if workflow_id is None or step_id is None else f'{workflow_id}:{step_id}'


def capabilities(
    *, step_config: StepConfig | None = None, registry: AgenToolRegistry | None = None
) -> list[AbstractCapability[Any]]:
    """`DBOSDurability` and `AgenToolDurability`: what makes an agent durable on DBOS.

    Tool calls run one at a time, so a recovered workflow's steps come in the same order.
    """
    check_instance('step_config', step_config, dict, optional=True)
    return [
        DBOSDurability(parallel_execution_mode='sequential', mcp_step_config=step_config),
        AgenToolDurability(registry=registry, unit_key=unit_key),
    ]


def register(agent: AbstractAgent[Any, Any]) -> AbstractAgent[Any, Any]:
    """Make `agent` runnable by `run` and `enqueue`, and recoverable by name; returns it."""
    check_instance('agent', agent, AbstractAgent)
    if agent.name is None:
        raise refuse('agent', 'an agent with a name: recovery finds it by name', agent)
    if _agents.get(agent.name) is not agent:
        _answers.pop(agent.name, None)  # another agent under this name: `run` runs it, as registered
    _agents[agent.name] = agent
    return agent


def durable(
    name: str, *, registry: AgenToolRegistry | None = None, step_config: StepConfig | None = None, **agent_kwargs: Any
) -> AbstractAgent[Any, Any]:
    """Agentool `name`'s agent with DBOS durability, registered for `run`, `enqueue` and recovery."""
    registry, extra = engine_options(registry, agent_kwargs)
    caps = [*capabilities(step_config=step_config, registry=registry), *extra]
    agent = register(build_agent(name, registry, capabilities=caps, **agent_kwargs))
    _answers.pop(name, None)
    if not extra:
        # What `run` runs: the same agent without capabilities, which answers lean, its operation one step.
        options: StepOptions = {**(step_config or {}), 'name': DBOSOperationNamer(name).operation_name(_OPERATION)}
        _answers[name] = _Answer(build_agent(name, registry, **agent_kwargs), options, registry)
    return agent


def default_database_path() -> Path:
    """The embedded system database: `dbos.sqlite3` in agentool's user-data directory (`agentool.paths`)."""
    return user_data_dir() / 'dbos.sqlite3'


def database_url(database: str | Path | None = None) -> str:
    """The system database URL: a `postgresql://` or `sqlite://` URL as given, a path as SQLite; else refused."""
    if database is None:
        database = os.environ.get(DATABASE_ENV) or default_database_path()
    text = str(database) if isinstance(cast(object, database), str | os.PathLike) else ''
    scheme = text.partition('://')[0].partition('+')[0] if '://' in text else None
    if not text.strip() or scheme not in (None, 'postgresql', 'postgres', 'sqlite'):
        raise refuse('database', 'a path (SQLite) or a postgresql:// or sqlite:// URL', database)
    if scheme is not None:
        return text
    path = Path(text).expanduser().resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    return f'sqlite:///{path}'


async def launch(
    database: str | Path | None = None,
    *,
    app_name: str = 'agentool',
    executor_id: str | None = None,
    application_version: str = 'agentool-1',
    log_level: str = 'WARNING',
    worker_concurrency: int | None = None,
    polling_interval: float = 1.0,
) -> None:
    """Configure DBOS and launch it; pending workflows of this executor are recovered now.

    Args:
        database: A path (SQLite) or a database URL (`database_url`).
        executor_id: This worker's identity; a restart with the same id recovers its workflows.
        application_version: Only workflows of the same version are recovered: keep it stable.
        worker_concurrency: How many queued runs this process works on at once (`None`: no limit).

    `ConfigurationError` for a bad option, DBOS launched with other settings, or a failed start.
    """
    check_text('app_name', app_name)
    check_text('application_version', application_version)
    check_text('log_level', log_level)
    check_text('executor_id', executor_id, optional=True, blank=False)
    if log_level not in (levels := logging.getLevelNamesMapping()):
        raise refuse('log_level', f'a logging level name ({", ".join(sorted(levels))})', log_level)
    check_limit('worker_concurrency', worker_concurrency, optional=True)
    check_seconds('polling_interval', polling_interval)
    url = database_url(database)
    config: DBOSConfig = {
        'name': app_name,
        'system_database_url': url,
        'application_version': application_version,
        'log_level': log_level,
    }
    if executor_id is not None:
        config['executor_id'] = executor_id
    settings = {**config, 'worker_concurrency': worker_concurrency, 'polling_interval': polling_interval}
    if _launched_with:
        if settings == _launched_with:
            return
        raise ConfigurationError(
            f'DBOS is already launched in this process (on {_safe_url(_launched_with["system_database_url"])}) with '
            'other settings: call `agentool.dbos.shutdown()` first',
            reason='already_launched',
            database=_safe_url(url),
        )
    if (engine_kwargs := _sqlite_engine_kwargs(url)) is not None:
        config['db_engine_kwargs'] = engine_kwargs
    logger = logging.getLogger('dbos')
    if not any(isinstance(existing, _QuietInputErrors) for existing in logger.filters):
        logger.addFilter(_QuietInputErrors())
    try:
        DBOS(config=config)
        DBOS.launch()
        await DBOS.register_queue_async(
            QUEUE_NAME,
            worker_concurrency=worker_concurrency,
            polling_interval_sec=polling_interval,
            on_conflict='always_update',
        )
    except Exception as error:
        # DBOS keeps a half-launched instance, which a later `launch` would reuse with these settings.
        DBOS.destroy(destroy_registry=False)
        raise ConfigurationError(
            f'agentool.dbos.launch() could not start DBOS on {_safe_url(url)}: {error}',
            reason='launch_failed',
            database=_safe_url(url),
        ) from error
    _launched_with.update(settings)


async def recover(executor_ids: Sequence[str]) -> list[str]:
    """Resume, in this process, the pending workflows of workers that died; returns their workflow ids."""
    # DBOS's own recovery entry point: unlike `resume_workflow`, it re-enqueues a workflow only while
    # it is pending on a dead executor, so two workers recovering it cannot both run it.
    executors = check_strings('executor_ids', executor_ids)
    with _needs_launch('recover'):
        handles = await anyio.to_thread.run_sync(
            DBOS._recover_pending_workflows,  # pyright: ignore[reportPrivateUsage]
            executors,
        )
    return [handle.workflow_id for handle in handles]


def shutdown() -> None:
    """Shut DBOS down (a later `launch` starts it again)."""
    _launched_with.clear()
    DBOS.destroy(destroy_registry=False)


@DBOS.workflow(name=WORKFLOW_NAME)
async def _run_workflow(agent_name: str, prompt: str) -> Any:
    agent = _agents.get(agent_name)
    if agent is None:
        raise not_found(agent_name, _agents, kind='durable agent', place='with DBOS (register it before launch())')
    answer = _answers.get(agent_name)
    if answer is None:
        return (await agent.run(prompt)).output
    with dispatching(UnitDispatcher(answer.step, None)):
        return (await answer.agent.run(prompt)).output


@dataclass(frozen=True)
class _Answer:
    """How `run` answers a `durable(name)` agent: its operation the one journaled step, named as
    the capability's; its model requests run in the workflow, unjournaled."""

    agent: AbstractAgent[Any, Any]
    options: StepOptions
    registry: AgenToolRegistry

    async def step(
        self, ctx: RunContext[Any] | None, agentool: str, operation: str, input: str, via: Via, retries: int
    ) -> Any:
        return await DBOS.run_step_async(
            self.options, run_unit, ctx, agentool, input, via, retries, registry=self.registry, unit_key=unit_key
        )


async def run(agent: AbstractAgent[Any, Any], prompt: str, *, workflow_id: str | None = None) -> Any:
    """Run `agent` on `prompt` as a durable workflow and return its output.

    Run again with the same `workflow_id`, it returns the recorded output (or waits for the workflow
    being recovered) instead of running twice. `ConfigurationError` before `launch`, for a wrong
    argument, or for a `workflow_id` another run took.
    """
    name = _checked(agent, prompt, workflow_id)
    with _needs_launch('run'):
        handle = await _start(name, prompt, workflow_id, queued=False)
    return await handle.get_result(polling_interval_sec=0.1)


async def enqueue(
    agent: AbstractAgent[Any, Any], prompt: str, *, workflow_id: str | None = None
) -> WorkflowHandleAsync[Any]:
    """Put a run of `agent` on the queue that every launched worker process consumes (errors as `run`)."""
    name = _checked(agent, prompt, workflow_id)
    with _needs_launch('enqueue'):
        return await _start(name, prompt, workflow_id, queued=True)


def _checked(agent: AbstractAgent[Any, Any], prompt: str, workflow_id: str | None) -> str:
    """The name of `agent`, registered now."""
    check_instance('agent', agent, AbstractAgent)
    check_text('prompt', prompt)
    check_text('workflow_id', workflow_id, optional=True, blank=False)
    register(agent)
    assert agent.name is not None
    return agent.name


def _check_same_run(status: WorkflowStatus, workflow_id: str, name: str, prompt: str) -> None:
    """Refuse a workflow id that a run of another agent or prompt took: its output is not this run's."""
    recorded = None if status.input is None else list(status.input['args'])
    if status.name == WORKFLOW_NAME and recorded in (None, [name, prompt]):
        return
    agent = recorded[0] if status.name == WORKFLOW_NAME and recorded else None
    other = f'the DBOS workflow {status.name!r}' if agent is None else f'a run of agent {agent!r}'
    message = (
        f'workflow_id {workflow_id!r} is taken by {other}{" on another prompt" if agent == name else ""}: '
        'a workflow id runs one agent on one prompt, so this run needs an id of its own'
    )
    raise ConfigurationError(
        message, reason='workflow_id_conflict', workflow_id=workflow_id, agent=name, recorded_agent=agent
    )


async def _start(name: str, prompt: str, workflow_id: str | None, *, queued: bool) -> WorkflowHandleAsync[Any]:
    """The workflow started, or put on the queue; a taken `workflow_id` must be this run's."""
    if workflow_id is not None and (status := await DBOS.get_workflow_status_async(workflow_id)) is not None:
        _check_same_run(status, workflow_id, name, prompt)
        if not queued:  # ran, or is being recovered (enqueueing it again is a no-op DBOS handles)
            return await DBOS.retrieve_workflow_async(workflow_id)
    with nullcontext() if workflow_id is None else SetWorkflowID(workflow_id):
        if queued:
            return await DBOS.enqueue_workflow_async(QUEUE_NAME, _run_workflow, name, prompt)
        return await DBOS.start_workflow_async(_run_workflow, name, prompt)


class _QuietInputErrors(logging.Filter):
    """DBOS's record of a workflow failed by a typed input error (the caller's answer): one INFO line."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if not isinstance(error, InvalidInputError):
            return True
        record.msg, record.args = f'{record.getMessage()} {type(error).__name__}: {error}', ()
        record.levelno, record.levelname = logging.INFO, 'INFO'
        record.exc_info, record.exc_text = None, None
        return logging.getLogger(record.name).isEnabledFor(logging.INFO)


def _safe_url(url: str) -> str:
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:  # not parsable: only its scheme
        return url.partition('://')[0] + '://...'


def _sqlite_engine_kwargs(url: str) -> dict[str, Any] | None:
    # DBOS on Python 3.12+ stamps rows with `unixepoch('subsec')`, which SQLite before 3.42 (many
    # Linux distributions') evaluates to NULL: its connections get a `unixepoch` that understands it.
    if not url.startswith('sqlite') or sys.version_info < (3, 12) or sqlite3.sqlite_version_info >= (3, 42):
        return None
    database = make_url(url).database or ':memory:'

    def connect() -> sqlite3.Connection:
        connection = sqlite3.connect(database, check_same_thread=False)
        connection.create_function('unixepoch', 1, _unixepoch)
        return connection

    return {'creator': connect}


def _unixepoch(value: object) -> float | int | None:
    if value == 'subsec':
        return time.time()
    if value == 'now':
        return int(time.time())
    try:
        moment = datetime.fromisoformat(str(value))
    except ValueError:
        return None  # what SQLite's own unixepoch gives for text it cannot read
    return int(moment.replace(tzinfo=moment.tzinfo or UTC).timestamp())
