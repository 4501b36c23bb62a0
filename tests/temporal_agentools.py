"""Agents and workflows of the Temporal tests, built at import (Temporal registers activities first).

The ledger and delegating agentools are those of `tests.durable_agentools` (each append commits
its effect at most once per `unit_key()`, and dies at the kill point `KILL_ENV` names). Here they
run on Temporal, each agent with `agentool.temporal.capabilities()`:

- `pipeline`: the LLM agent of `tests.function_pipeline` with `AgenToolToolset`, calling
  `ledger_append`, `batch_run` (an orchestrating operation with `Route(durable=False)` whose three
  `injector.call`s are units) and `ledger_append` again;
- `ledger_durable` (`agentool.temporal.durable('ledger')`), `ledger_string` (the model string) and
  `ledger_explicit` (`AgenToolCapability` + a model string): one append each;
- `flaky` (`durable('flaky')`): an operation whose first attempt fails, and one raising a typed error;
- `missing`: the model string of an agentool no worker registered;
- `clerk` (`durable('clerk')`): an operation reading its deps;
- `bulk` (`durable('bulk')`): an operation returning as many characters as asked (payload limits).

`PipelineWorkflow` runs the pipeline on a job; `AppendWorkflow` runs one of the single-append agents;
`DepsWorkflow` runs `clerk` with deps that cannot be sent to an activity (a lock), or with none (the
worker's injector provides them).
Worker processes run `python -m tests.temporal_worker` (see there).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Literal

from pydantic import BaseModel
from pydantic_ai import Agent, RunContext
from pydantic_ai.durable_exec.temporal import AgentPlugin, PydanticAIPlugin, PydanticAIWorkflow
from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.common import RetryPolicy
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions
from temporalio.workflow import ActivityConfig

import agentool.temporal as durable_temporal
from agentool import AgenToolCapability, RoutingConfig, ToolArgumentError, create_agentool, get_injector
from agentool.durable import unit_key
from tests.durable_agentools import build
from tests.function_pipeline import pipeline_agent

__all__ = (
    'ACTIVITY_CONFIG',
    'AGENTS',
    'AppendWorkflow',
    'Attempt',
    'bulk_attempts',
    'ClerkDeps',
    'DepsWorkflow',
    'PipelineWorkflow',
    'SINGLE',
    'WORKFLOWS',
    'client',
    'plugins',
    'refused_attempts',
    'register',
    'unit_keys',
    'worker',
)

ACTIVITY_CONFIG = ActivityConfig(
    start_to_close_timeout=timedelta(seconds=30),
    # A SIGKILLed worker stops heartbeating: its activity is retried elsewhere within 3 s (long
    # enough that a live worker on a loaded machine does not miss a beat).
    heartbeat_timeout=timedelta(seconds=3),
    retry_policy=RetryPolicy(initial_interval=timedelta(milliseconds=100), maximum_attempts=5),
)


def _capabilities() -> list[Any]:
    return durable_temporal.capabilities(activity_config=ACTIVITY_CONFIG)


class FlakyInput(BaseModel):
    operation: Literal['flake', 'refuse']
    key: str


class Attempt(BaseModel):
    key: str
    attempt: int
    unit: str | None


async def flaky_flake(key: str) -> Attempt:
    """Fails its activity's first attempt with an unexpected error: Temporal retries it."""
    attempt = activity.info().attempt
    unit_keys.append(unit_key())
    if attempt == 1:
        raise RuntimeError(f'{key}: a flaky network call')
    return Attempt(key=key, attempt=attempt, unit=unit_key())


async def flaky_refuse(key: str) -> Attempt:
    """Raises a typed agentool error on every attempt: Temporal does not retry it."""
    refused_attempts.append(activity.info().attempt)
    raise ToolArgumentError(f'{key}: refused', agentool='flaky')


@dataclass
class ClerkDeps:
    label: str
    lock: Any


class ClerkInput(BaseModel):
    operation: Literal['sign']
    key: str


async def clerk_sign(ctx: RunContext[ClerkDeps], key: str) -> str:
    return f'{ctx.deps.label}:{key}'


class BulkInput(BaseModel):
    operation: Literal['text']
    size: int


async def bulk_text(size: int) -> str:
    bulk_attempts.append(activity.info().attempt)
    return 'x' * size


bulk_attempts: list[int] = []
"""The attempts `bulk_text` saw in this process."""
refused_attempts: list[int] = []
"""The attempts `flaky_refuse` saw in this process."""
unit_keys: list[str | None] = []
"""The `unit_key()` each attempt of `flaky_flake` saw in this process."""


def register() -> None:
    """Register the agentools the agents call (`ledger`, `batch`, `flaky`) in the registry in effect."""
    build()
    create_agentool(
        name='flaky',
        input_schema=FlakyInput,
        routing_config=RoutingConfig(operation_map={'flake': 'flaky_flake', 'refuse': 'flaky_refuse'}),
        tools=[flaky_flake, flaky_refuse],
        output_type=Attempt,
        replace=True,
    )
    create_agentool(
        name='bulk',
        input_schema=BulkInput,
        routing_config=RoutingConfig(operation_map={'text': 'bulk_text'}),
        tools=[bulk_text],
        output_type=str,
        replace=True,
    )
    create_agentool(
        name='clerk',
        input_schema=ClerkInput,
        routing_config=RoutingConfig(operation_map={'sign': 'clerk_sign'}),
        tools=[clerk_sign],
        deps_type=ClerkDeps,
        output_type=str,
        replace=True,
    )
    get_injector().provide(ClerkDeps, instance=ClerkDeps('worker', threading.Lock()), replace=True)


register()  # a worker process's registry; a test calls it again in its own


pipeline = pipeline_agent('pipeline', _capabilities())
SINGLE: dict[str, Any] = {
    'durable': durable_temporal.durable('ledger', activity_config=ACTIVITY_CONFIG),
    'string': Agent('agentool:ledger', name='ledger_string', capabilities=_capabilities()),
    'explicit': Agent(
        'agentool:ledger',
        name='ledger_explicit',
        capabilities=[AgenToolCapability('ledger'), *_capabilities()],
    ),
    'flaky': durable_temporal.durable('flaky', activity_config=ACTIVITY_CONFIG),
    # The model string of an agentool no worker registered: found missing in the workflow, at run time.
    'missing': Agent('agentool:missing', name='ledger_missing', capabilities=_capabilities()),
    'clerk': durable_temporal.durable('clerk', activity_config=ACTIVITY_CONFIG),
    'bulk': durable_temporal.durable('bulk', activity_config=ACTIVITY_CONFIG),
}
"""The single-append agents by form."""
AGENTS: list[Any] = [pipeline, *SINGLE.values()]


@workflow.defn(name='agentool.tests.pipeline')
class PipelineWorkflow(PydanticAIWorkflow):
    @workflow.run
    async def run(self, prompt: str) -> str:
        return (await pipeline.run(prompt)).output


@workflow.defn(name='agentool.tests.append')
class AppendWorkflow(PydanticAIWorkflow):
    @workflow.run
    async def run(self, form: str, prompt: str) -> Any:
        output = (await SINGLE[form].run(prompt)).output
        # The agentool's typed output as the workflow got it back from the activity (the model-string
        # forms' agents answer text).
        value = output.model_dump(mode='json') if isinstance(output, BaseModel) else output
        return {'type': type(output).__name__, 'value': value}


@workflow.defn(name='agentool.tests.deps')
class DepsWorkflow(PydanticAIWorkflow):
    @workflow.run
    async def run(self, prompt: str, given: bool) -> str:
        deps = ClerkDeps('desk', threading.Lock()) if given else None
        return (await SINGLE['clerk'].run(prompt, deps=deps)).output


WORKFLOWS: list[type] = [PipelineWorkflow, AppendWorkflow, DepsWorkflow]


def plugins() -> list[Any]:
    """The worker plugins: each agent's activities."""
    return [AgentPlugin(agent) for agent in AGENTS]


async def client(address: str) -> Client:
    """A client of the server at `address` with pydantic-ai's payload converter."""
    return await Client.connect(address, plugins=[PydanticAIPlugin()])


async def worker(address: str, task_queue: str, *, identity: str | None = None) -> Worker:
    """A worker of `task_queue` running this module's workflows and its agents' activities.

    The workflow sandbox passes agentool and the tests through: the workflows use the agents this
    module built at import, with their activities registered (see the scaling-out guide).
    """
    runner = SandboxedWorkflowRunner(
        restrictions=SandboxRestrictions.default.with_passthrough_modules('agentool', 'tests')
    )
    return Worker(
        await client(address),
        task_queue=task_queue,
        workflows=WORKFLOWS,
        plugins=plugins(),
        workflow_runner=runner,
        identity=identity,
        # No sticky cache: a killed worker's workflow tasks go to the shared queue at once instead of
        # waiting out its sticky queue's timeout (each task replays the history, short here).
        max_cached_workflows=0,
    )
