"""What each operation needs from its input: one rule, read once at creation, enforced on every surface.

An operation **uses** the fields its tool's parameters match or its transform reads (probed with a
recording stand-in) and **needs** those it cannot run without; only a field defaulting to `None`
can be needed. The catalog publishes this; `AgenToolManager.check_requirements` enforces it.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, cast

from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic.fields import FieldInfo

from ._signature import UNREADABLE, ToolSignature

if TYPE_CHECKING:
    from .config import Route, Transform

__all__ = (
    'FieldsSource',
    'Requirements',
    'operation_requirements',
    'json_key',
    'merge_errors',
    'loads',
)

FieldsSource = Literal['matched', 'transform', 'schema']


@dataclass(frozen=True, kw_only=True)
class Requirements:
    """The input fields one operation uses and needs (field names, not JSON keys)."""

    operation: str
    used: frozenset[str]
    needed: tuple[str, ...]
    """Fields the operation needs that the schema itself does not require, in schema order."""
    non_null: frozenset[str] = frozenset()
    source: FieldsSource
    keys: Mapping[str, str]
    allowed: frozenset[str] | None
    """Fields an input may set when the schema forbids unknown fields; `None`: any field of the schema."""

    def problems(self, given: Collection[str], data: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Pydantic-style errors for an input setting fields `given` from `data`: missing needs, unused fields."""
        errors: list[dict[str, Any]] = []
        for name in self.needed:
            key = self.keys[name]
            if name not in given:
                errors.append({'type': 'missing', 'loc': [key], 'msg': 'Field required', 'input': data})
            elif name in self.non_null and data.get(key, ...) is None:
                message = f'Input should not be null: operation {self.operation!r} needs a value'
                errors.append({'type': 'none_forbidden', 'loc': [key], 'msg': message, 'input': None})
        if self.allowed is not None:
            message = f'Extra inputs are not permitted (operation {self.operation!r} does not use it)'
            for name in given:
                if name not in self.allowed:
                    key = self.keys.get(name, name)
                    errors.append({'type': 'extra_forbidden', 'loc': [key], 'msg': message, 'input': data.get(key)})
        return errors

    def satisfied_by(self, input: BaseModel) -> bool:
        given = input.model_fields_set
        return (
            all(name in given for name in self.needed)
            and all(getattr(input, name) is not None for name in self.non_null)
            and (self.allowed is None or all(name in self.allowed for name in given))
        )


def operation_requirements(
    input_schema: type[BaseModel],
    operation_field: str,
    tool: ToolSignature | None,
    operation: str,
    route: Route,
) -> Requirements:
    """The requirements of `operation`, routed by `route` to `tool` (`None`: the tool is not given)."""
    model_fields = input_schema.model_fields
    source: FieldsSource
    needed: set[str] = set()
    non_null: set[str] = set()
    used: set[str]
    if route.transform is None and tool is not None:
        used, source = set(tool.params) & set(model_fields), 'matched'
        needed = {name for name in used if name in tool.required}
        non_null = {name for name in needed if not _takes_none(tool, name)}
    elif route.transform is None:
        used, source = set(model_fields), 'schema'
    else:
        read = probe_transform(route.transform, operation_field, operation)
        if read is None or not read <= set(model_fields):
            used, source = set(model_fields), 'schema'
        else:
            used, source = read, 'transform'
            needed = {name for name in read if _needs_value(route.transform, operation_field, operation, name, tool)}
            non_null = needed
    needed = {name for name in needed if model_fields[name].default is None}
    used.discard(operation_field)
    # A tool taking **kwargs, or a transform that cannot be probed, may use anything: nothing is refused as unused.
    open_ended = source == 'schema' or (tool is not None and route.transform is None and tool.accepts_var_kwargs)
    allowed = frozenset(used | {operation_field} | {n for n, i in model_fields.items() if i.is_required()})
    schema_required = {name for name, info in model_fields.items() if info.is_required()}
    forbids = input_schema.model_config.get('extra') == 'forbid'
    return Requirements(
        operation=operation,
        used=frozenset(used),
        needed=tuple(name for name in model_fields if name in needed - schema_required - {operation_field}),
        non_null=frozenset(non_null & needed - schema_required),
        source=source,
        keys={name: json_key(name, info) for name, info in model_fields.items()},
        allowed=allowed if forbids and not open_ended and not allowed >= set(model_fields) else None,
    )


def merge_errors(
    keys: Collection[str], first: list[dict[str, Any]], second: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Two pydantic-style error lists as one, in the order of the JSON `keys` (then as given)."""
    order = {key: index for index, key in enumerate(keys)}
    merged = [*first, *second]
    return sorted(merged, key=lambda e: order.get(str(e['loc'][0]) if e['loc'] else '', len(order)))


def loads(data: str | bytes) -> Any:
    """`data` parsed by the standard library, or `None` (a lone surrogate pydantic took)."""
    try:
        return json.loads(data)
    except ValueError:
        return None


def _takes_none(tool: ToolSignature, parameter: str) -> bool:
    """Whether the tool's parameter accepts `None`, by pydantic's reading of its annotation (unannotated: yes)."""
    hint = tool.hints.get(parameter, Any)
    try:
        TypeAdapter[Any](hint).validate_python(None)
    except ValidationError:
        return False
    except UNREADABLE:  # an annotation pydantic cannot read: assume it may
        return True
    except Exception:  # a validator of the annotation failing on `None` in its own way: it refuses `None` too
        return False
    return True


def json_key(name: str, info: FieldInfo) -> str:
    alias = info.validation_alias if isinstance(info.validation_alias, str) else info.alias
    return name if alias is None else alias


class _ProbeValue:
    """The value every field holds while a transform is probed: whatever is done with it gives it again."""

    __slots__ = ()

    def __getattr__(self, name: str) -> _ProbeValue:
        return self

    def __call__(self, *args: Any, **kwargs: Any) -> _ProbeValue:
        return self

    def __getitem__(self, key: Any) -> _ProbeValue:
        return self

    def __iter__(self) -> Any:
        return iter(())

    def __len__(self) -> int:
        return 0

    __int__ = __index__ = __len__

    def __float__(self) -> float:
        return 0.0

    def __str__(self) -> str:
        return ''

    def __format__(self, spec: str) -> str:
        return ''

    def __add__(self, other: Any) -> _ProbeValue:
        return self

    __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = __add__
    __floordiv__ = __mod__ = __pow__ = __and__ = __or__ = __neg__ = __pos__ = __abs__ = __add__


_PROBE_VALUE = _ProbeValue()


class _Recorder:
    """Stands in for the validated input and records which attributes are read (`null` reads as `None`)."""

    __slots__ = ('_null', '_operation', '_operation_field', 'read')

    def __init__(self, operation_field: str, operation: str, null: str | None = None) -> None:
        self._operation_field = operation_field
        self._operation = operation
        self._null = null
        self.read: set[str] = set()

    def __getattr__(self, name: str) -> Any:
        if name == self._operation_field:
            return self._operation
        self.read.add(name)
        return None if name == self._null else _PROBE_VALUE


def _needs_value(transform: Transform, operation_field: str, operation: str, field: str, tool: Any) -> bool:
    """Whether `transform` fails, or hands `None` to a tool parameter that cannot take it, when `field` is `None`."""
    try:
        result = cast(object, transform(_Recorder(operation_field, operation, null=field)))
    except Exception:  # whatever it raises, its own check too, says it needs the field (see `probe_transform`)
        return True
    if inspect.iscoroutine(result):
        result.close()
        return False
    if not isinstance(tool, ToolSignature) or not isinstance(result, Mapping):
        return False
    produced = cast('Mapping[str, Any]', result)
    return any(v is None and p in tool.params and not _takes_none(tool, p) for p, v in produced.items())


def probe_transform(transform: Transform, operation_field: str, operation: str) -> set[str] | None:
    """The attributes `transform` reads from a stand-in input, or `None` when it raises or passes the
    input on (what it raises surfaces as a `TransformError` on a real input)."""
    recorder = _Recorder(operation_field, operation)
    try:
        result = cast(object, transform(recorder))
    except Exception:  # anything may be raised on a stand-in (see above); `BaseException`s propagate
        return None
    if inspect.iscoroutine(result):
        result.close()
        return None
    if result is recorder:
        return None
    if isinstance(result, Mapping) and any(v is recorder for v in cast('Mapping[Any, Any]', result).values()):
        return None
    return recorder.read
