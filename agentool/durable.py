"""Durable agentool operations on any pydantic-ai durability engine (DBOS, Temporal, Prefect).

Attach `AgenToolDurability()` to an agent next to the engine's capability (`DBOSDurability`, ...):
during a run inside the engine's workflow, each agentool operation the run executes — the manager
tool's routed call, an `AgenToolToolset` tool, and `injector.call` made by the workflow's own code
(an agentool that delegates with `Route(durable=False)`) — becomes one durable unit through
pydantic-ai's public `@durable_operation`. A completed unit is journaled: after a crash, the engine
replays its recorded result instead of calling the tool again. An agentool's own model requests are
not units: they are a deterministic function of the operations' results (`wrap_model_request`).

A unit whose tool crashed after its side effect but before the engine recorded the result runs
again on recovery (every engine has that window). Tools with side effects make them idempotent with
`unit_key()`, a key that stays the same across those re-executions; the engine modules
(`agentool.dbos`, `agentool.temporal`, `agentool.prefect`) give it the engine's identity of the unit.

The persisted name of the unit (`OPERATION_NAME` within capability `CAPABILITY_ID`) is
`{agent name}__capability__agentool.operation` on DBOS, `agent__{agent name}__capability__agentool__operation`
on Temporal and `Capability: agentool.operation` on Prefect: renaming either strands in-flight workflows.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Coroutine
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from pydantic import BaseModel
from pydantic_ai import ApprovalRequired, CallDeferred, ModelRetry, RunContext, ToolFailed
from pydantic_ai.capabilities import AbstractCapability, WrapModelRequestHandler, WrapRunHandler, durable_operation
from pydantic_ai.messages import ModelResponse
from pydantic_ai.models import Model, ModelRequestContext, ModelResolutionContext
from pydantic_ai.run import AgentRunResult
from pydantic_ai.tools import ToolDefinition

from ._options import check_function, check_instance, check_instances, check_text
from .core.agent.capability import parse_model_id
from .core.injector import AgenToolInjector, get_injector
from .core.manager import MANAGER_TOOL_NAME, AgenToolManager
from .core.model import AgenToolModel
from .core.registry import AgenToolRegistry, get_registry
from .core.request import dispatcher_reset, dispatcher_scope
from .errors import AgenToolError

__all__ = (
    'AgenToolDurability',
    'CAPABILITY_ID',
    'OPERATION_NAME',
    'UnitDispatcher',
    'UnitFailure',
    'UnitKey',
    'UnitRunner',
    'engine_options',
    'run_unit',
    'typed_result',
    'unit_key',
)

CAPABILITY_ID = 'agentool'
"""The capability's stable id: part of every persisted unit name."""

OPERATION_NAME = 'operation'
"""The durable operation's stable name: part of every persisted unit name."""

UnitKey = Callable[[], str | None]
"""Gives the engine's identity of the durable unit running now (DBOS: workflow id and step id)."""

UnitFailure = Callable[[AgenToolError], BaseException]
"""The exception a unit raises for a typed agentool error (Temporal: a non-retryable `ApplicationError`)."""

_IN_WORKFLOW = {'temporal': False, 'prefect': False}
"""Tool metadata that keeps a function tool out of Temporal activities and Prefect tasks (pydantic-ai's keys)."""

_unit_key: ContextVar[str | None] = ContextVar('agentool_unit_key', default=None)
_caller: ContextVar[AgenToolInjector | None] = ContextVar('agentool_durable_caller', default=None)
_input: ContextVar[tuple[BaseModel, RunContext[Any]] | None] = ContextVar('agentool_durable_input', default=None)
"""The validated input of the unit being dispatched and the context its tool gets, for an engine
that runs the unit in this process."""


def unit_key() -> str | None:
    """The key of the durable unit running this operation, the same on every re-execution of it.

    `None` outside a durable unit or when the engine gives no key. A tool with a side effect records
    the key with the effect (in one transaction) and skips the effect when the key is already there.
    """
    return _unit_key.get()


@dataclass
class AgenToolDurability(AbstractCapability[Any]):
    """Makes every agentool operation of the agent's runs one durable unit of the run's engine.

    Args:
        registry: Where the manager tool's agentools are registered; by default the one in effect.
        unit_key: The engine's key of the running unit (the engine modules pass theirs).
        unit_failure: What the unit raises for a typed agentool error, when the engine needs it in its
            own form to carry the error's type and details (by default the error itself).

    Raises:
        ConfigurationError: an option of the wrong type, named in the error.
    """

    id: str | None = CAPABILITY_ID
    registry: AgenToolRegistry | None = field(default=None, kw_only=True)
    unit_key: UnitKey | None = field(default=None, kw_only=True, repr=False)
    unit_failure: UnitFailure | None = field(default=None, kw_only=True, repr=False)

    def __post_init__(self) -> None:
        # Checked here: a wrong type would otherwise fail mid-run, inside the engine's workflow.
        check_text('id', self.id, optional=True)
        check_instance('registry', self.registry, AgenToolRegistry, optional=True)
        check_function('unit_key', self.unit_key, optional=True)
        check_function('unit_failure', self.unit_failure, optional=True)

    async def wrap_run(self, ctx: RunContext[Any], *, handler: WrapRunHandler) -> AgentRunResult[Any]:
        token = dispatcher_scope(UnitDispatcher(self._unit, ctx))
        try:
            return await handler()
        finally:
            dispatcher_reset(token)

    async def wrap_model_request(
        self, ctx: RunContext[Any], *, request_context: ModelRequestContext, handler: WrapModelRequestHandler
    ) -> ModelResponse:
        """An agentool's own model answers here, in the workflow: nothing of it is journaled.

        Its answer is a deterministic function of the messages, which a recovered workflow rebuilds
        from the journaled operations, so the engine's model-request unit would only cost a journal
        write. Skipping the handler skips the inner request lifecycle (the engine's unit, and the
        request hooks of capabilities listed after this one); an LLM's requests pass through.
        """
        model = request_context.model
        if not isinstance(model, AgenToolModel) or request_context.streaming:
            return await handler(request_context)
        return await model.request(
            request_context.messages, request_context.model_settings, request_context.model_request_parameters
        )

    async def resolve_model_id(self, ctx: ModelResolutionContext[Any], *, model_id: str) -> Model | None:
        """`agentool:NAME` as the agentool's model, wherever the engine rebuilds the run's model.

        A Temporal activity rebuilds the model of the run context it was sent from its id, through the
        agent's capabilities and then pydantic-ai's `infer_model` itself, which does not know `agentool:`
        ids (`import agentool` wraps the module's function, not a reference held elsewhere).
        """
        name = parse_model_id(model_id)
        return None if name is None else AgenToolModel(name, registry=self.registry)

    async def prepare_tools(self, ctx: RunContext[Any], tool_defs: list[ToolDefinition]) -> list[ToolDefinition]:
        """The manager tool runs in the workflow, not as an engine's tool unit: its operation is the unit.

        Temporal and Prefect make every function tool call one activity or task of their own, so the
        routed call would be that unit and not this capability's (no `unit_key()`, another persisted
        name, the tool validated outside the run). Opting the manager tool out of that wrapping
        (an async tool, run in the workflow) leaves its operation as the one unit, as on DBOS.
        """
        return [
            replace(tool_def, metadata={**(tool_def.metadata or {}), **_IN_WORKFLOW})
            if tool_def.name == MANAGER_TOOL_NAME
            else tool_def
            for tool_def in tool_defs
        ]

    @durable_operation(name=OPERATION_NAME)
    async def run_operation(
        self,
        ctx: RunContext[Any],
        agentool: str,
        operation: str,
        input: str,
        via: Literal['tool', 'injector'],
        retries: int = 0,
    ) -> Any:
        """Run one operation (its input as JSON text); the body of the durable unit (see `run_unit`)."""
        try:
            return await run_unit(ctx, agentool, input, via, retries, registry=self.registry, unit_key=self.unit_key)
        except AgenToolError as error:
            if self.unit_failure is None:
                raise
            raise self.unit_failure(error) from error

    async def _unit(
        self,
        ctx: RunContext[Any] | None,
        agentool: str,
        operation: str,
        input: str,
        via: Literal['tool', 'injector'],
        retries: int,
    ) -> Any:
        assert ctx is not None  # the run's context: this capability's dispatcher always has one
        return await self.run_operation(ctx, agentool, operation, input, via, retries)

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None


UnitRunner = Callable[
    [RunContext[Any] | None, str, str, str, Literal['tool', 'injector'], int], Coroutine[Any, Any, Any]
]
"""Runs one operation as one durable unit of an engine: `(ctx, agentool, operation, input as JSON
text, via, retries)`; its body is `run_unit`. `AgenToolDurability.run_operation` is one."""


def engine_options(
    registry: AgenToolRegistry | None, agent_kwargs: dict[str, Any]
) -> tuple[AgenToolRegistry, list[AbstractCapability[Any]]]:
    """What each engine's `durable(name, ...)` starts from: the registry in effect and the further
    capabilities given (taken out of `agent_kwargs`), both checked."""
    check_instance('registry', registry, AgenToolRegistry, optional=True)
    extra = check_instances('capabilities', agent_kwargs.pop('capabilities', ()), AbstractCapability)
    return (get_registry() if registry is None else registry), extra


async def run_unit(
    ctx: RunContext[Any] | None,
    agentool: str,
    input: str,
    via: Literal['tool', 'injector'],
    retries: int = 0,
    *,
    registry: AgenToolRegistry | None = None,
    unit_key: UnitKey | None = None,
) -> Any:
    """The body of a durable unit: run one operation (its input as JSON text) with `unit_key()` set.

    An unexpected exception of the tool is retried `retries` times (`Route.retries`, idempotent routes).
    """
    # Calls made inside the unit belong to it: they run directly (engines cannot nest units).
    token = dispatcher_scope(None)
    key = _unit_key.set(None if unit_key is None else unit_key())
    try:
        for attempt in range(retries + 1):
            try:
                return await _run(ctx, agentool, input, via, registry)
            except (AgenToolError, ModelRetry, ToolFailed, CallDeferred, ApprovalRequired):
                raise
            except Exception:  # the tool's own failure: retried (an idempotent route), the last one propagates
                if attempt == retries:
                    raise
    finally:
        _unit_key.reset(key)
        dispatcher_reset(token)


async def _run(
    ctx: RunContext[Any] | None, agentool: str, input: str, via: str, registry: AgenToolRegistry | None
) -> Any:
    if via == 'injector':
        injector = _caller.get()
        return await (get_injector() if injector is None else injector).call(agentool, input)
    manager = (get_registry() if registry is None else registry).get_manager(agentool)
    # In this process the caller's input model itself, which the JSON text may not restore
    # exactly (a `SecretStr` is masked in JSON, a `Field(exclude=True)` left out), and the
    # caller's context (the model-string form's has no deps).
    given = _input.get()
    if given is not None:
        return await manager.execute(given[1], given[0])
    assert ctx is not None  # an engine running the unit elsewhere passes the run's context
    validated = manager.validate_json(input)
    if ctx.deps is not None or not manager.tool_for(manager.operation_of(validated)).takes_ctx:
        return await manager.execute(ctx, validated)
    # The run gave no deps: this process's injector builds them, as the caller's did for it.
    async with get_injector().call_deps(manager.name, manager.config.deps_type) as built:
        if built is None:
            return await manager.execute(ctx, validated)
        given = copy.copy(ctx)  # the engine's own context stays as it came
        given.deps = built
        return await manager.execute(given, validated)


@dataclass(frozen=True)
class UnitDispatcher:
    """A durable run's dispatcher: hands each operation to `run`, one durable unit each.

    `run_ctx` is the run's context, for the units of calls that come with none (`injector.call`);
    `None` when `run` needs none.
    """

    run: UnitRunner
    run_ctx: RunContext[Any] | None

    async def dispatch_execute(self, ctx: RunContext[Any], manager: AgenToolManager, input: BaseModel) -> Any:
        # Only the fields the caller set: the manager passes unset optional fields as the tool's defaults.
        # `round_trip`: a `Json[...]` field is written as the JSON text it validates from.
        data = input.model_dump_json(by_alias=True, exclude_unset=True, exclude_computed_fields=True, round_trip=True)
        operation = manager.operation_of(input)
        retries = _retries(manager, operation)
        token = _input.set((input, ctx))
        # A context of the run itself carries what the engine needs (its durability capability);
        # the model-string form's own context, made for the tool, does not: the unit gets the run's.
        unit_ctx = ctx if self.run_ctx is None or ctx.root_capability is not None else self.run_ctx
        if self.run_ctx is not None and unit_ctx.deps is not self.run_ctx.deps:
            # Deps the injector built for this call (the run was given none, or other ones) do not
            # travel with the unit: an engine running it elsewhere has them built there (`_run`).
            unit_ctx = replace(unit_ctx, deps=None)
        try:
            result = await self.run(unit_ctx, manager.name, operation, data, 'tool', retries)
        finally:
            _input.reset(token)
        return typed_result(manager, input, result)

    async def dispatch_call(
        self, injector: Any, manager: AgenToolManager, name: str, data: str | bytes, input: BaseModel
    ) -> Any:
        text = data if isinstance(data, str) else data.decode()
        operation = manager.operation_of(input)
        token = _caller.set(injector)
        try:
            retries = _retries(manager, operation)
            result = await self.run(self.run_ctx, name, operation, text, 'injector', retries)
        finally:
            _caller.reset(token)
        return result if isinstance(result, str) else typed_result(manager, input, result)


def typed_result(manager: AgenToolManager, input: BaseModel, result: Any) -> Any:
    """`result` as the agentool's output type again, after an engine that journals JSON returned it as data.

    In-process engines (DBOS) hand back the object itself, which passes as it is.
    """
    if not manager.checks_output or type(result) is manager.output_class:
        return result
    return manager.check_output(input, result)


def _retries(manager: AgenToolManager, operation: str) -> int:
    route = manager.config.routing_config.operation_map.get(operation)
    return 0 if route is None else route.retries
