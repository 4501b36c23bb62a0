"""The `RunContext` a tool gets on the injector's direct path, made with pydantic-ai's constructor.

Building one costs more than the rest of a direct call: each agentool builds one, calls copy it.
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
    """A copy of `template` with the call's deps and prompt, and new usage and messages."""
    ctx = copy.copy(template)
    ctx.deps = deps
    ctx.prompt = prompt
    ctx.usage = RunUsage()
    ctx.messages = []
    return ctx
