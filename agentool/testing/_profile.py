"""A model profile as a cassette keeps it, so a replay with no model prepares requests as recorded."""

from __future__ import annotations

from typing import Any, cast

from pydantic_ai import native_tools
from pydantic_ai.native_tools import AbstractNativeTool
from pydantic_ai.profiles import ModelProfile


def plain_profile(profile: ModelProfile) -> dict[str, Any]:
    """The profile's values JSON can carry (a schema transformer stays behind: it shapes the wire)."""
    plain: dict[str, Any] = {}
    for key, value in cast('dict[str, Any]', profile).items():
        if isinstance(value, bool | int | float | str):
            plain[key] = value
        elif isinstance(value, frozenset | tuple):
            items = cast('frozenset[Any] | tuple[Any, ...]', value)
            if all(isinstance(item, str) for item in items):
                plain[key] = {'set': sorted(items)} if isinstance(items, frozenset) else {'tuple': list(items)}
            elif all(isinstance(item, type) and issubclass(item, AbstractNativeTool) for item in items):
                plain[key] = {'native_tools': sorted(item.__name__ for item in items)}
    return plain


def restored_profile(plain: dict[str, Any]) -> ModelProfile:
    profile: dict[str, Any] = {}
    for key, value in plain.items():
        if isinstance(value, dict):
            tagged = cast('dict[str, list[str]]', value)
            if 'set' in tagged:
                profile[key] = frozenset(tagged['set'])
            elif 'tuple' in tagged:
                profile[key] = tuple(tagged['tuple'])
            elif 'native_tools' in tagged:
                found = (getattr(native_tools, name, None) for name in tagged['native_tools'])
                profile[key] = frozenset(kind for kind in found if isinstance(kind, type))
        else:
            profile[key] = value
    return cast(ModelProfile, profile)
