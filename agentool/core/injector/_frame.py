"""The task-local frame, as the injector reads it: itself, the run in progress and the chain of agentools in it.

The variable is the core's (`agentool.core.request.frame`, which the core's own surfaces and the
`concurrent_safe=False` gate read); here it is typed with the injector's own classes.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import TYPE_CHECKING, TypeAlias, cast

from ..request import frame as _frame

if TYPE_CHECKING:
    from ._injector import AgenToolInjector
    from ._resources import RunScope

__all__ = ('Frame', 'frame')

Frame: TypeAlias = 'tuple[AgenToolInjector, RunScope | None, tuple[str, ...]]'

frame = cast('ContextVar[Frame | None]', _frame)
"""The injector in effect, the run in progress (`None` outside one) and the chain of agentools in it."""
