"""The task-local frame: the injector in effect, the run in progress and the chain of agentools in it."""

from __future__ import annotations

from contextvars import ContextVar
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    from ._injector import AgenToolInjector
    from ._resources import RunScope

__all__ = ('Frame', 'frame')

Frame: TypeAlias = 'tuple[AgenToolInjector, RunScope | None, tuple[str, ...]]'

frame: ContextVar[Frame | None] = ContextVar('agentool_injector_frame', default=None)
"""The injector in effect, the run in progress (`None` outside one) and the chain of agentools in it.

A context variable, so it travels with the task: agentools calling each other share the run's
resources and chain (which is how a cycle is caught before it recurses), concurrent tasks do not.
"""
