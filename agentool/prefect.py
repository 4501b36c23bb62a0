"""Durable agentools on Prefect (`pip install 'agentool[prefect]'`): each operation one cached task.

A retried flow reads each completed operation's result from Prefect's result storage instead of
calling the tool again (the scaling-out guide shows a flow).
"""

from __future__ import annotations

from typing import Any

from pydantic_ai.agent import AbstractAgent
from pydantic_ai.capabilities import AbstractCapability

from ._options import check_instance
from .core.agent.capability import build_agent
from .core.registry import AgenToolRegistry
from .durable import AgenToolDurability, engine_options, missing_extra

try:
    from prefect.context import TaskRunContext
    from prefect.transactions import get_transaction
    from pydantic_ai.durable_exec.prefect import PrefectDurability
except ImportError as error:  # pragma: no cover - exercised without the extra
    raise missing_extra('prefect') from error

__all__ = ('capabilities', 'durable', 'unit_key')


def unit_key() -> str | None:
    """Prefect's identity of the task running now: its cache key (the same when a retried flow runs
    the task again), else its task run id; `None` outside a task."""
    context = TaskRunContext.get()
    if context is None:
        return None
    # The transaction's key is the cache key (the task run's `cache_key` is set only once it completes).
    transaction = get_transaction()
    key = None if transaction is None else transaction.key
    return key or str(context.task_run.id)


def capabilities(
    *, durability: PrefectDurability[Any] | None = None, registry: AgenToolRegistry | None = None
) -> list[AbstractCapability[Any]]:
    """`PrefectDurability` (or `durability`, configured otherwise) and `AgenToolDurability`.

    The operation's task keeps pydantic-ai's default config: `Route.retries` retries inside it.
    """
    check_instance('durability', durability, PrefectDurability, optional=True)
    return [
        PrefectDurability() if durability is None else durability,
        AgenToolDurability(registry=registry, unit_key=unit_key),
    ]


def durable(name: str, *, registry: AgenToolRegistry | None = None, **agent_kwargs: Any) -> AbstractAgent[Any, Any]:
    """Agentool `name`'s agent with Prefect durability: its operation one task when run in a flow."""
    registry, extra = engine_options(registry, agent_kwargs)
    return build_agent(name, registry, capabilities=[*capabilities(registry=registry), *extra], **agent_kwargs)
