"""Durable agentool operations on any pydantic-ai durability engine (DBOS, Temporal, Prefect).

`AgenToolDurability()`, next to the engine's capability, makes each agentool operation of a run
one durable unit (pydantic-ai's `@durable_operation`); the scaling-out guide gives the persisted
names (`OPERATION_NAME` within `CAPABILITY_ID`: renaming either strands in-flight workflows).
"""

from __future__ import annotations

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
from .core.operation import UNSET, Policy, run_operation
from .core.registry import AgenToolRegistry, get_registry
from .core.request import dispatching
from .errors import AgenToolError, MissingExtraError

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

Via = Literal['tool', 'injector']
"""How the operation was called: by the agent's tool call, or through the injector."""

_IN_WORKFLOW = {'temporal': False, 'prefect': False}  # pydantic-ai's keys: no activity, no task

_unit_key: ContextVar[str | None] = ContextVar('agentool_unit_key', default=None)
_caller: ContextVar[AgenToolInjector | None] = ContextVar('agentool_durable_caller', default=None)
# The unit's validated input and its tool's context, for an engine running the unit in this process.
_input: ContextVar[tuple[BaseModel, RunContext[Any]] | None] = ContextVar('agentool_durable_input', default=None)

_UNIT_POLICY = Policy(surface='direct', typed_errors=False)
"""A unit's call elsewhere: traced only inside a trace in progress; a `ModelRetry` reaches the engine as raised."""


def unit_key() -> str | None:
    """The key of the durable unit running this operation, the same on every re-execution; else `None`."""
    return _unit_key.get()


@dataclass
class AgenToolDurability(AbstractCapability[Any]):
    """Makes every agentool operation of the agent's runs one durable unit of the run's engine.

    `unit_key` and `unit_failure` are the engine's (`UnitKey`, `UnitFailure`); the engine modules pass theirs.
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
        with dispatching(UnitDispatcher(self._unit, ctx)):
            return await handler()

    async def wrap_model_request(
        self, ctx: RunContext[Any], *, request_context: ModelRequestContext, handler: WrapModelRequestHandler
    ) -> ModelResponse:
        """An agentool's own model answers here, unjournaled (recovery rebuilds its messages); an LLM's pass."""
        model = request_context.model
        if not isinstance(model, AgenToolModel) or request_context.streaming:
            return await handler(request_context)
        return await model.request(
            request_context.messages, request_context.model_settings, request_context.model_request_parameters
        )

    async def resolve_model_id(self, ctx: ModelResolutionContext[Any], *, model_id: str) -> Model | None:
        """`agentool:NAME` as the agentool's model where the engine rebuilds a model from its id."""
        name = parse_model_id(model_id)
        return None if name is None else AgenToolModel(name, registry=self.registry)

    async def prepare_tools(self, ctx: RunContext[Any], tool_defs: list[ToolDefinition]) -> list[ToolDefinition]:
        """The manager tool runs in the workflow (its operation is the unit), not as an activity or task."""
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
        via: Via,
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
        self, ctx: RunContext[Any] | None, agentool: str, operation: str, input: str, via: Via, retries: int
    ) -> Any:
        assert ctx is not None  # the run's context: this capability's dispatcher always has one
        return await self.run_operation(ctx, agentool, operation, input, via, retries)

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None


UnitRunner = Callable[[RunContext[Any] | None, str, str, str, Via, int], Coroutine[Any, Any, Any]]
"""Runs one operation as one durable unit: `(ctx, agentool, operation, input as JSON, via, retries)`."""


def engine_options(
    registry: AgenToolRegistry | None, agent_kwargs: dict[str, Any]
) -> tuple[AgenToolRegistry, list[AbstractCapability[Any]]]:
    """The registry in effect and the extra capabilities popped from `agent_kwargs`, checked."""
    check_instance('registry', registry, AgenToolRegistry, optional=True)
    extra = check_instances('capabilities', agent_kwargs.pop('capabilities', ()), AbstractCapability)
    return (get_registry() if registry is None else registry), extra


def missing_extra(engine: Literal['dbos', 'temporal', 'prefect']) -> MissingExtraError:
    """The error for importing `agentool.{engine}` without its extra."""
    return MissingExtraError(
        f"agentool.{engine} needs the '{engine}' extra: pip install 'agentool[{engine}]'", extra=engine
    )


async def run_unit(
    ctx: RunContext[Any] | None,
    agentool: str,
    input: str,
    via: Via,
    retries: int = 0,
    *,
    registry: AgenToolRegistry | None = None,
    unit_key: UnitKey | None = None,
) -> Any:
    """The body of a durable unit: one operation with `unit_key()` set, retrying the tool's own
    exception `retries` times (`Route.retries`)."""
    key = _unit_key.set(None if unit_key is None else unit_key())
    try:
        # Calls made inside the unit belong to it: they run directly (engines cannot nest units).
        with dispatching(None):
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


async def _run(
    ctx: RunContext[Any] | None, agentool: str, input: str, via: str, registry: AgenToolRegistry | None
) -> Any:
    if via == 'injector':
        injector = _caller.get()
        return await (get_injector() if injector is None else injector).call(agentool, input)
    manager = (get_registry() if registry is None else registry).get_manager(agentool)
    # In this process the caller's own input model, which the JSON may not restore (a `SecretStr`).
    given = _input.get()
    if given is not None:
        return await manager.execute(given[1], given[0])
    assert ctx is not None  # an engine running the unit elsewhere passes the run's context
    # The one operation sequence: when the run gave no deps, this process's injector builds them.
    deps = UNSET if ctx.deps is None else ctx.deps
    return await run_operation(_UNIT_POLICY, manager, manager.validate_json(input), ctx, deps)


@dataclass(frozen=True)
class UnitDispatcher:
    """A durable run's dispatcher: each operation to `run`, one unit each; `run_ctx` for calls without one."""

    run: UnitRunner
    run_ctx: RunContext[Any] | None

    async def dispatch_execute(self, ctx: RunContext[Any], manager: AgenToolManager, input: BaseModel) -> Any:
        # Only the fields the caller set; `round_trip`: a `Json[...]` field as the text it validates from.
        data = input.model_dump_json(by_alias=True, exclude_unset=True, exclude_computed_fields=True, round_trip=True)
        operation = manager.operation_of(input)
        token = _input.set((input, ctx))
        # The model-string form's context, made for the tool, lacks the engine's capability: use the run's.
        unit_ctx = ctx if self.run_ctx is None or ctx.root_capability is not None else self.run_ctx
        if self.run_ctx is not None and unit_ctx.deps is not self.run_ctx.deps:
            # Deps the injector built for this call do not travel: `_run` builds them where it runs.
            unit_ctx = replace(unit_ctx, deps=None)
        try:
            result = await self.run(unit_ctx, manager.name, operation, data, 'tool', _retries(manager, operation))
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
            result = await self.run(self.run_ctx, name, operation, text, 'injector', _retries(manager, operation))
        finally:
            _caller.reset(token)
        return result if isinstance(result, str) else typed_result(manager, input, result)


def typed_result(manager: AgenToolManager, input: BaseModel, result: Any) -> Any:
    """`result` as the agentool's output type again, after an engine journaled it as JSON."""
    if not manager.checks_output or type(result) is manager.output_class:
        return result
    return manager.check_output(input, result)


def _retries(manager: AgenToolManager, operation: str) -> int:
    route = manager.config.routing_config.operation_map.get(operation)
    return 0 if route is None else route.retries
