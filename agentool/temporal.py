"""Durable agentools on Temporal (`pip install 'agentool[temporal]'`): each operation one activity.

Build `durable(name)` at module level (the worker registers its activities); client and worker
need pydantic-ai's `PydanticAIPlugin`. The scaling-out guide shows a worker and a workflow.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, is_dataclass, replace
from datetime import timedelta
from typing import Any, cast

from pydantic import BaseModel
from pydantic_ai import RunContext, UserError
from pydantic_ai.agent import AbstractAgent
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.run import AgentRunResult
from pydantic_core import PydanticSerializationError, to_json, to_jsonable_python

from ._options import check_instance
from .core.agent.capability import build_agent
from .core.definition import type_name
from .core.registry import AgenToolRegistry
from .durable import AgenToolDurability, engine_options, missing_extra
from .errors import AgenToolError, ConfigurationError, DepsUnavailableError, quote

try:
    from pydantic_ai.durable_exec.temporal import TemporalDurability
    from temporalio import activity, workflow
    from temporalio.common import RetryPolicy
    from temporalio.exceptions import ApplicationError
    from temporalio.workflow import ActivityConfig
except ImportError as error:  # pragma: no cover - exercised without the extra
    raise missing_extra('temporal') from error

__all__ = ('DEFAULT_ACTIVITY_CONFIG', 'capabilities', 'durable', 'unit_key')

DEFAULT_ACTIVITY_CONFIG = ActivityConfig(
    start_to_close_timeout=timedelta(seconds=60),
    heartbeat_timeout=timedelta(seconds=10),
    retry_policy=RetryPolicy(maximum_attempts=3),
)
"""The activities' default config: a worker that dies mid-activity is noticed within 10 s and the activity
runs again elsewhere, at most 3 attempts (`capabilities()` does not retry agentool's typed errors)."""


def unit_key() -> str | None:
    """Temporal's identity of the activity running now, the same on every attempt; `None` outside one."""
    if not activity.in_activity():
        return None
    info = activity.info()
    return f'{info.workflow_id}:{info.workflow_run_id}:{info.activity_id}'


def capabilities(
    *, activity_config: ActivityConfig | None = None, registry: AgenToolRegistry | None = None
) -> list[AbstractCapability[Any]]:
    """`TemporalDurability`, `AgenToolDurability` and one that fails the workflow at once on a typed
    agentool error; `activity_config` defaults to `DEFAULT_ACTIVITY_CONFIG`."""
    check_instance('activity_config', activity_config, dict, optional=True)
    config = ActivityConfig(**(DEFAULT_ACTIVITY_CONFIG if activity_config is None else activity_config))
    policy = config.get('retry_policy')
    if not isinstance(cast(object, policy), RetryPolicy | None):
        raise ConfigurationError(
            f"activity_config['retry_policy'] must be a temporalio RetryPolicy; got {type(policy).__name__}",
            option='activity_config',
        )
    # Each typed error class by its exact name, the whole hierarchy (the list grows as it is walked).
    classes: list[type[AgenToolError]] = [AgenToolError]
    for typed in classes:
        classes += typed.__subclasses__()
    names = [*((policy and policy.non_retryable_error_types) or ()), *(typed.__name__ for typed in classes)]
    config['retry_policy'] = replace(policy or RetryPolicy(), non_retryable_error_types=list(dict.fromkeys(names)))
    try:
        durability = TemporalDurability(activity_config=config)
    except UserError as error:  # pydantic-ai validates the config (a timeout of the wrong type, ...)
        raise ConfigurationError(str(error), option='activity_config') from error
    operations = AgenToolDurability(registry=registry, unit_key=unit_key, unit_failure=_application_error)
    return [durability, operations, _WorkflowFailures()]


def _application_error(error: AgenToolError) -> ApplicationError:
    """`error` as Temporal's non-retryable failure (any other exception would retry the workflow task)."""
    details = to_jsonable_python(error.details, fallback=repr)  # the failure itself must serialise
    return ApplicationError(error.message, details, type=type(error).__name__, non_retryable=True)


@dataclass
class _WorkflowFailures(AbstractCapability[Any]):
    """In a workflow, a run's typed agentool error (bad input, an unknown agentool) fails the workflow."""

    async def on_run_error(self, ctx: RunContext[Any], *, error: BaseException) -> AgentRunResult[Any]:
        if not workflow.in_workflow():
            raise error
        if isinstance(error, UserError | PydanticSerializationError) and (unsent := _unserialisable_deps(ctx.deps)):
            # pydantic-ai's `UserError` cannot say which value an activity could not take; the deps can.
            raise _application_error(unsent) from error
        if isinstance(error, AgenToolError):
            raise _application_error(error) from error
        raise error


def _unserialisable_deps(deps: object) -> DepsUnavailableError | None:
    """The error naming the field of `deps` an activity cannot receive; `None` when they serialise."""
    if deps is None or _serialises(deps):
        return None
    names: list[str] = (
        [field.name for field in fields(deps)]
        if is_dataclass(deps)
        else list(type(deps).model_fields)
        if isinstance(deps, BaseModel)
        else []
    )
    field = next((name for name in names if not _serialises(getattr(deps, name, None))), None)
    culprit = deps if field is None else getattr(deps, field)
    where = '' if field is None else f' field {quote(field)} holds a {type_name(type(culprit))}, which'
    return DepsUnavailableError(
        f'the deps of the run ({type_name(type(deps))}) cannot be sent to a Temporal activity:{where} does not '
        'serialise to JSON; give the run no deps, so that the injector of the worker running the operation '
        'builds them (injector.provide), or deps whose fields serialise',
        deps_type=type_name(type(deps)),
        field=field,
        type=type_name(type(culprit)),
        reason='unserialisable',
    )


def _serialises(value: object) -> bool:
    try:
        to_json(value)
    except (PydanticSerializationError, TypeError, ValueError):
        return False
    return True


def durable(
    name: str,
    *,
    registry: AgenToolRegistry | None = None,
    activity_config: ActivityConfig | None = None,
    **agent_kwargs: Any,
) -> AbstractAgent[Any, Any]:
    """Agentool `name`'s agent with Temporal durability (register it with `AgentPlugin(agent)`)."""
    registry, extra = engine_options(registry, agent_kwargs)
    caps = [*capabilities(activity_config=activity_config, registry=registry), *extra]
    return build_agent(name, registry, capabilities=caps, **agent_kwargs)
