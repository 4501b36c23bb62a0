"""Dispatch before the model: rules that let an agentool answer a turn instead of an LLM.

`DispatchCapability(rules)` goes on any pydantic-ai agent. Before the model is asked, the rules
look at the prompt: a JSON object for an agentool (`JsonRule`), a command such as `/status 123`
(`CommandRule`), or any test on the prompt and deps (`PredicateRule`). The first rule that
claims the turn names an agentool input; the agentool answers in the agent's output type, with no
model request. Everything else reaches the model unchanged. The guide is
`docs/guides/dispatch.md`.
"""

from __future__ import annotations

from ._answer import DISPATCH_METADATA_KEY, DISPATCH_PROVIDER, DispatchRecord, dispatch_record
from .capability import DepsSource, DispatchCapability, DispatchCounts
from .rules import CommandRule, Dispatch, DispatchRequest, DispatchRule, JsonRule, OnInvalid, PredicateRule

__all__ = (
    'DispatchCapability',
    'DispatchCounts',
    'DepsSource',
    'DispatchRule',
    'JsonRule',
    'CommandRule',
    'PredicateRule',
    'Dispatch',
    'DispatchRequest',
    'OnInvalid',
    'DispatchRecord',
    'dispatch_record',
    'DISPATCH_PROVIDER',
    'DISPATCH_METADATA_KEY',
)
