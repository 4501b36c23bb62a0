"""Agents and workflows of the Temporal tests, built at import (Temporal registers activities first).

Each agent has `agentool.temporal.capabilities()`: `pipeline` (the ledger pipeline of `tests.function_pipeline`),
one append by each other form (`SINGLE`), `flaky` (a first attempt failing, a typed error), `missing` (an
unregistered agentool), `clerk` (reading deps) and `bulk` (payload limits).
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


# What the attempts of `bulk_text`, `flaky_refuse` and `flaky_flake` saw in this process.
bulk_attempts: list[int] = []
refused_attempts: list[int] = []
unit_keys: list[str | None] = []


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


async def client(address: str) -> Client:
    """A client of the server at `address` with pydantic-ai's payload converter."""
    return await Client.connect(address, plugins=[PydanticAIPlugin()])


async def worker(address: str, task_queue: str, *, identity: str | None = None) -> Worker:
    """A worker of `task_queue` running this module's workflows and its agents' activities.

    The sandbox passes agentool and the tests through: the workflows use the agents built at import.
    """
    runner = SandboxedWorkflowRunner(
        restrictions=SandboxRestrictions.default.with_passthrough_modules('agentool', 'tests')
    )
    return Worker(
        await client(address),
        task_queue=task_queue,
        workflows=[PipelineWorkflow, AppendWorkflow, DepsWorkflow],
        plugins=[AgentPlugin(agent) for agent in [pipeline, *SINGLE.values()]],
        workflow_runner=runner,
        identity=identity,
        # No sticky cache: a killed worker's workflow tasks go to the shared queue at once instead of
        # waiting out its sticky queue's timeout (each task replays the history, short here).
        max_cached_workflows=0,
    )
