"""The `RunContext` a tool gets on the injector's direct path, made with pydantic-ai's constructor.

Building a `RunContext` runs its dataclass `__init__` over some fifty fields (several with default
factories), which costs more than the rest of a direct call together. So each agentool gets one
context from the public constructor when it is registered (`context_template`), and every direct
call takes a shallow copy of it with its own `deps`, `prompt`, `usage` and `messages`
(`direct_context`): a copy of a finished context, so a field pydantic-ai adds is carried over as
it built it. The other fields are shared between copies, as pydantic-ai shares them between the
contexts of one run's tool calls (`dataclasses.replace`).
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic_ai import Agent, RunContext
from pydantic_ai.models import Model
from pydantic_ai.usage import RunUsage

__all__ = ('context_template', 'direct_context')


def context_template(*, model: Model, agent: Agent[Any, Any] | None, tool_name: str) -> RunContext[Any]:
    """The context every direct-path call of one agentool starts from, built once."""
    return RunContext[Any](deps=None, model=model, usage=RunUsage(), agent=agent, tool_name=tool_name)


def direct_context(template: RunContext[Any], deps: Any, prompt: str | None) -> RunContext[Any]:
    """The context a tool gets on the direct path: a copy of `template` with the call's deps and prompt.

    Usage and messages are new for each call (a tool may add to them); nothing a tool changes on
    its context reaches the template or another call.
    """
    ctx = copy.copy(template)
    ctx.deps = deps
    ctx.prompt = prompt
    ctx.usage = RunUsage()
    ctx.messages = []
    return ctx
