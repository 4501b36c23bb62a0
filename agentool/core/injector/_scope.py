"""The injector in effect: `get_injector()` and `use_injector()`."""

from __future__ import annotations

from collections.abc import Generator
from contextlib import contextmanager
from typing import cast

from ..._options import check_instance
from ..registry import get_registry
from ..request import COMPANION, Frame
from ..request import frame as _frame
from ._injector import AgenToolInjector

__all__ = ('get_injector', 'use_injector')


def get_injector() -> AgenToolInjector:
    """The injector in effect: the one running the current agentool, else the innermost
    `use_injector()` scope, else the default injector of the registry in effect.

    Pairing the default injector with the registry keeps them consistent: a fresh registry
    (`use_registry()`) comes with a fresh injector, and the process default with the process default.
    """
    current = _frame.get()
    if current is not None:
        return cast(AgenToolInjector, current.injector)
    # The registry owns its default injector, so the two are collected together: a global map from
    # registry to injector would keep every scoped registry alive through the agents it holds.
    companion = vars(get_registry())
    injector = companion.get(COMPANION)
    if injector is None:
        injector = companion[COMPANION] = AgenToolInjector()
    return injector


@contextmanager
def use_injector(injector: AgenToolInjector | None = None) -> Generator[AgenToolInjector]:
    """Make `injector` (a fresh one by default) the injector in effect inside the block.

    Task-local (a context variable) and restored on exit, even on error.

    Raises:
        ConfigurationError: `injector` is not an `AgenToolInjector` (checked on entry, as `use_registry`
            does: otherwise every agentool lookup inside the block would fail somewhere unrelated).
    """
    check_instance('injector', injector, AgenToolInjector, optional=True)
    injector = AgenToolInjector() if injector is None else injector
    current = _frame.get()
    keep = current is not None and current.injector is injector
    token = _frame.set(current if keep and current is not None else Frame(injector, None, ()))
    try:
        yield injector
    finally:
        _frame.reset(token)
