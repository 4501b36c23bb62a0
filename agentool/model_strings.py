"""The `agentool:NAME` model-string hook for plain `Agent('agentool:NAME')`.

`import agentool` wraps the public `pydantic_ai.models.infer_model` (`uninstall()` restores it);
`AgenToolCapability(NAME)` patches nothing and carries `deps`.
"""

from __future__ import annotations

import functools
from typing import Any

import pydantic_ai.models as _models

from .core.agent.capability import parse_model_id
from .core.model import AgenToolModel

__all__ = ('install', 'uninstall', 'is_installed', 'register_agentool_models')

_MARK = '__agentool_wrapped__'


def is_installed() -> bool:
    """Whether `pydantic_ai.models.infer_model` currently resolves `agentool:` ids."""
    return bool(getattr(_models.infer_model, _MARK, False))


def install() -> None:
    """Wrap `pydantic_ai.models.infer_model` so it resolves `agentool:NAME`. Idempotent."""
    if is_installed():
        return
    original = _models.infer_model

    @functools.wraps(original)
    def infer_model(model: Any, *args: Any, **kwargs: Any) -> _models.Model:
        if isinstance(model, str) and (name := parse_model_id(model)) is not None:
            return AgenToolModel(name)
        return original(model, *args, **kwargs)

    setattr(infer_model, _MARK, True)
    _models.infer_model = infer_model


def uninstall() -> None:
    """Restore the `infer_model` that `install()` wrapped. Idempotent."""
    if is_installed():
        _models.infer_model = _models.infer_model.__wrapped__  # type: ignore[attr-defined]


def register_agentool_models() -> None:
    """Make `Agent('agentool:NAME')` resolve: the architecture guide's name for `install()` (already done)."""
    install()
