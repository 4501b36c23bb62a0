"""How a change is named: two values windowed around their first difference, a tool's JSON schema
field by field ("property `to_unit` removed, `target_unit` added")."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, TypeGuard, cast


def show_pair(before: Any, after: Any, *, old: str = 'recorded', new: str = 'sent', limit: int = 160) -> str:
    """`<before> recorded, <after> sent` as JSON, each cut around their first difference so both show it."""
    left, right = (json.dumps(value, sort_keys=True, ensure_ascii=False, default=repr) for value in (before, after))
    if len(left) > limit or len(right) > limit:
        shortest = min(len(left), len(right))
        start = max(0, next((i for i in range(shortest) if left[i] != right[i]), shortest) - limit // 4)
        left, right = _cut(left, start, limit), _cut(right, start, limit)
    return f'{left} {old}, {right} {new}'


def _cut(text: str, start: int, limit: int) -> str:
    end = start + limit
    return f'{"..." if start > 0 else ""}{text[start:end]}{"..." if end < len(text) else ""}'


_MAX_DEPTH = 4
"""How deep nested object properties are named; deeper changes show as their parent's change."""


def tool_changes(label: str, recorded: list[Any], sent: list[Any], *, new: str = 'sent') -> list[str]:
    """What changed from the tool definitions `recorded` to `sent`, one line each; `label` names a
    tool (`tool`, `output tool`), `new` the side `sent` is (`sent`, `listed`)."""
    before: dict[str, dict[str, Any]] = {tool.get('name'): tool for tool in recorded}
    after: dict[str, dict[str, Any]] = {tool.get('name'): tool for tool in sent}
    changes = [f'{label} {name!r} added' for name in after if name not in before]
    changes += [f'{label} {name!r} removed' for name in before if name not in after]
    for name in (name for name in after if name in before):
        for key in sorted(set(before[name]) | set(after[name])):
            old_value, new_value = before[name].get(key), after[name].get(key)
            if old_value == new_value:
                continue
            if key == 'parameters_json_schema':  # named field by field, not as a window of raw JSON
                fields = '; '.join(schema_changes(old_value, new_value, new=new))
                changes.append(f'{label} {name!r}: schema changed: {fields}')
            else:
                changes.append(f'{label} {name!r}: {key} changed: {show_pair(old_value, new_value, new=new)}')
    return changes


def schema_changes(before: object, after: object, *, new: str = 'sent') -> list[str]:
    """What changed from schema `before` to `after`, one phrase each (empty when they are equal)."""
    if before == after:
        return []
    if not (isinstance(before, Mapping) and isinstance(after, Mapping)):
        return [f'schema {show_pair(before, after, new=new)}']
    return _changes(cast('Mapping[str, Any]', before), cast('Mapping[str, Any]', after), '', 0, new)


def _changes(before: Mapping[str, Any], after: Mapping[str, Any], path: str, depth: int, new: str) -> list[str]:
    changes: list[str] = []
    props_before = _properties(before)
    props_after = _properties(after)
    removed = [name for name in props_before if name not in props_after]
    added = [name for name in props_after if name not in props_before]
    if removed or added:
        named = [f'{_names(path, removed)} removed'] if removed else []
        named += [f'{_names(path, added)} added'] if added else []
        noun = 'properties' if len(removed) > 1 or len(added) > 1 else 'property'
        changes.append(f'{noun} {", ".join(named)}')
    for name in (name for name in props_after if name in props_before):
        sub_before, sub_after = props_before[name], props_after[name]
        if sub_before == sub_after:
            continue
        nested = f'{path}{name}.'
        if depth + 1 < _MAX_DEPTH and _is_object(sub_before) and _is_object(sub_after):
            changes.extend(_changes(sub_before, sub_after, nested, depth + 1, new))
        else:
            pair = show_pair(sub_before, sub_after, new=new)
            changes.append(f'property `{path}{name}` changed: {pair}')
    required_before, required_after = _required(before), _required(after)
    now = [name for name in required_after if name not in required_before and name in props_before]
    no_longer = [name for name in required_before if name not in required_after and name in props_after]
    if now:
        changes.append(f'{_names(path, now)} now required')
    if no_longer:
        changes.append(f'{_names(path, no_longer)} no longer required')
    for key in sorted(set(before) | set(after)):
        if key in ('properties', 'required') or before.get(key) == after.get(key):
            continue
        pair = show_pair(before.get(key, '(absent)'), after.get(key, '(absent)'), new=new)
        changes.append(f'`{path}{key}` changed: {pair}' if path else f'schema `{key}` changed: {pair}')
    return changes


def _properties(schema: Mapping[str, Any]) -> dict[str, Any]:
    properties: object = schema.get('properties', {})
    return dict(cast('Mapping[str, Any]', properties)) if isinstance(properties, Mapping) else {}


def _required(schema: Mapping[str, Any]) -> list[str]:
    required: object = schema.get('required', [])
    return [str(name) for name in cast('list[object]', required)] if isinstance(required, list) else []


def _is_object(schema: object) -> TypeGuard[Mapping[str, Any]]:
    return isinstance(schema, Mapping) and 'properties' in schema


def _names(path: str, names: list[str]) -> str:
    return ', '.join(f'`{path}{name}`' for name in names)
