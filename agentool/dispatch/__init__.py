"""Dispatch before the model: rules that let an agentool answer a turn instead of an LLM.

`DispatchCapability(rules)` goes on any pydantic-ai agent: the first rule that claims a turn
names an agentool input, answered with no model request (`docs/guides/dispatch.md`).
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
