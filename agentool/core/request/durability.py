"""The seam durable execution takes operation calls over by (no engine imported): while a durable run
is in progress, `run_operation` hands each call to the active `OperationDispatcher`."""

from __future__ import annotations

from collections.abc import Generator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel
from pydantic_ai import RunContext

if TYPE_CHECKING:
    from ..manager import AgenToolManager

__all__ = ('OperationDispatcher', 'active_dispatcher', 'dispatching', 'is_durable')


class OperationDispatcher(Protocol):
    """Runs one operation of a durable run as a durable unit of the run's engine."""

    async def dispatch_execute(self, ctx: RunContext[Any], manager: AgenToolManager, input: BaseModel) -> Any:
        """`manager.execute(ctx, input)`, as one durable unit."""
        ...

    async def dispatch_call(
        self, injector: Any, manager: AgenToolManager, name: str, data: str | bytes, input: BaseModel
    ) -> Any:
        """`injector.call(name, data)`, as one durable unit."""
        ...


_ACTIVE: ContextVar[OperationDispatcher | None] = ContextVar('agentool_operation_dispatcher', default=None)

active_dispatcher = _ACTIVE.get
"""The dispatcher of the durable run in progress, or `None` (outside one, and inside a durable unit)."""


@contextmanager
def dispatching(dispatcher: OperationDispatcher | None) -> Generator[None]:
    """Make `dispatcher` the active one inside the block (`None`: calls run directly)."""
    token = _ACTIVE.set(dispatcher)
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def is_durable(manager: AgenToolManager, operation: str) -> bool:
    """Whether `operation` of `manager`'s agentool runs as its own durable unit (`Route.durable`)."""
    route = manager.config.routing_config.operation_map.get(operation)
    return route is None or route.durable
