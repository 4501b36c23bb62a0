"""A cheap `RunContext` for the injector's direct path.

Building a `RunContext` runs a dataclass `__init__` over some fifty fields (several with default
factories), which costs more than the rest of a direct call together. The direct path sets only
the few fields an agentool tool reads (`deps`, `model`, `prompt`, `agent`, `tool_name`); every
other field gets its declared default (`usage`: a fresh `RunUsage`) the first time it is read, so
the context behaves like one built normally (`dataclasses.replace`, `repr` and mutation included).

Only public dataclass metadata is used (`dataclasses.fields`). If `RunContext` ever stops being a
plain dataclass whose other fields all have defaults, contexts are built normally instead.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from pydantic_ai import Agent, RunContext
from pydantic_ai.models import Model
from pydantic_ai.usage import RunUsage

__all__ = ('context_base', 'direct_context', 'context_type')

_SET = ('deps', 'model', 'prompt', 'agent', 'tool_name')


def _lazy_defaults() -> dict[str, Callable[[], Any]] | None:
    if '__slots__' in vars(RunContext) or not dataclasses.is_dataclass(RunContext):
        return None
    factories: dict[str, Callable[[], Any]] = {}
    for field in dataclasses.fields(RunContext):
        if field.name in _SET:
            continue
        if field.name == 'usage':  # required, but a tool seldom reads it: made on first read too
            factories[field.name] = RunUsage
        elif field.default_factory is not dataclasses.MISSING:
            factories[field.name] = field.default_factory
        elif field.default is dataclasses.MISSING:
            return None  # a required field we do not know how to fill: build contexts normally
        # Fields with a plain default are class attributes already: nothing to do on read.
    return factories


_FACTORIES = _lazy_defaults()


class _DirectRunContext(RunContext[Any]):
    """A `RunContext` whose unset fields are filled with their defaults on first read."""

    def __getattr__(self, name: str) -> Any:
        # Only called for attributes the instance does not have yet.
        factory = _FACTORIES.get(name) if _FACTORIES is not None else None
        if factory is None:
            raise AttributeError(name)
        value = factory()
        self.__dict__[name] = value
        return value


def context_type(*, model: Model, agent: Agent[Any, Any] | None, tool_name: str) -> type[RunContext[Any]] | None:
    """A `RunContext` class for one agentool's direct path: its shared fields are class attributes.

    A context of it is then `object.__new__` and two attribute stores (`deps`, `prompt`), half the
    cost of filling an instance dictionary, which is what tools taking a context pay per call.
    Construction by `__init__` (as `dataclasses.replace` does) sets every field on the instance as
    usual. `None` when `RunContext` has a shape `direct_context` does not know.
    """
    if _FACTORIES is None:
        return None
    shared = {'model': model, 'agent': agent, 'tool_name': tool_name, 'deps': None, '__module__': __name__}
    return type(RunContext.__name__, (_DirectRunContext,), shared)


def context_base(*, model: Model, agent: Agent[Any, Any] | None, tool_name: str) -> dict[str, Any]:
    """The fields every direct-path context of one agentool shares, computed once."""
    return {'model': model, 'agent': agent, 'tool_name': tool_name}


def direct_context(base: dict[str, Any], deps: Any, prompt: str | None) -> RunContext[Any]:
    """The context a tool gets on the direct path: `base` (see `context_base`), the deps and the prompt."""
    if _FACTORIES is None:
        return RunContext(**base, deps=deps, prompt=prompt, usage=RunUsage())
    ctx = object.__new__(_DirectRunContext)
    fields = ctx.__dict__
    fields.update(base)
    fields['deps'] = deps
    fields['prompt'] = prompt
    return ctx
