"""Which input fields an operation uses, and the JSON schema of an input for that operation alone.

For a route without a transform: the input fields whose names match the tool's parameters (exactly
what the manager passes). For a route with a transform: the transform is called once with a
recording stand-in for the input, and the fields it reads are the ones listed; if it raises, or
reads anything that is not a field (say `model_dump`), every field is listed. Fields the input
schema requires are always listed, since no input validates without them.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypedDict, Union, get_args, get_origin

from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined, to_jsonable_python

if TYPE_CHECKING:
    from pydantic import BaseModel

    from ..core._signature import ToolSignature
    from ..core.config import Route, Transform

__all__ = (
    'CatalogField',
    'FieldsSource',
    'operation_fields',
    'operation_request_schema',
    'probe_transform',
    'schema_key',
    'type_label',
)

FieldsSource = Literal['matched', 'transform', 'schema']
"""How an operation's fields were found: matched to tool parameters, read by the transform, or the whole schema."""


class CatalogField(TypedDict):
    """One input field an operation uses."""

    name: str
    """The JSON key (the field's alias when it has one)."""
    type: str
    description: str | None
    required: bool
    default: Any
    """The default value (JSON); `None` when the field is required or its default is computed."""


def type_label(annotation: Any) -> str:
    """A short, readable name for a type annotation: `float`, `str | None`, `list[Item]`, `Literal['a']`."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return type_label(args[0])
    if origin in (Union, types.UnionType):
        return ' | '.join(type_label(arg) for arg in args)
    if origin is Literal:
        return f'Literal[{", ".join(repr(arg) for arg in args)}]'
    if origin is not None and args:
        return f'{type_label(origin)}[{", ".join(type_label(arg) for arg in args)}]'
    if annotation is None or annotation is types.NoneType:
        return 'None'
    if annotation is Ellipsis:
        return '...'
    if isinstance(annotation, list):  # the parameters of a `Callable`
        items: list[Any] = annotation  # pyright: ignore[reportUnknownVariableType]
        return f'[{", ".join(type_label(item) for item in items)}]'
    if isinstance(annotation, type):
        return annotation.__name__
    return repr(annotation).replace('typing.', '').replace('typing_extensions.', '')


def operation_fields(
    input_schema: type[BaseModel],
    operation_field: str,
    tool: ToolSignature | None,
    op: str,
    route: Route,
    properties: dict[str, Any],
) -> tuple[list[CatalogField], FieldsSource]:
    """The fields operation `op` uses, in schema order, and how they were found.

    `tool` is the routed tool's signature, `None` when the configuration does not give the tool
    (then every field is listed). `properties` are the input JSON schema's properties (they give
    each field's JSON key).
    """
    model_fields = input_schema.model_fields
    source: FieldsSource
    if route.transform is None and tool is not None:
        used, source, tool_required = set(tool.params), 'matched', tool.required
    elif route.transform is None:
        used, source, tool_required = set(model_fields), 'schema', frozenset[str]()
    else:
        read = probe_transform(route.transform, operation_field, op)
        if read is None or not read <= set(model_fields):
            used, source = set(model_fields), 'schema'
        else:
            used, source = read, 'transform'
        tool_required = frozenset[str]()
    fields: list[CatalogField] = []
    for field_name, info in model_fields.items():
        if field_name == operation_field:
            continue
        if field_name in used or info.is_required():
            required = info.is_required() or field_name in tool_required
            fields.append(_field(field_name, info, required, properties))
    return fields, source


def schema_key(name: str, info: FieldInfo, properties: dict[str, Any]) -> str:
    """The JSON key of field `name` in the input schema's `properties`: its alias when it has one."""
    alias = info.validation_alias if isinstance(info.validation_alias, str) else info.alias
    return alias if alias is not None and alias in properties else name


def _field(name: str, info: FieldInfo, required: bool, properties: dict[str, Any]) -> CatalogField:
    default = None if info.is_required() or info.default is PydanticUndefined else info.default
    return CatalogField(
        name=schema_key(name, info, properties),
        type=type_label(info.annotation),
        description=info.description,
        required=required,
        default=to_jsonable_python(default, serialize_unknown=True),
    )


def operation_request_schema(
    schema: dict[str, Any],
    operation_field: str,
    operation: str,
    fields: Sequence[CatalogField],
    description: str | None = None,
) -> dict[str, Any]:
    """The JSON schema of an input for one operation, derived from the input's object `schema`.

    The operation field (its JSON key, `operation_field`) becomes a constant; the other properties
    are `fields`, in order; `additionalProperties` is kept from `schema`.
    """
    properties: dict[str, Any] = schema.get('properties', {})
    operation_property = {
        key: value for key, value in properties.get(operation_field, {}).items() if key in ('title', 'description')
    }
    derived: dict[str, Any] = {
        'title': f'{schema.get("title", "Input")} ({operation})',
        'type': 'object',
        'properties': {
            operation_field: {**operation_property, 'const': operation, 'type': 'string'},
            **{f['name']: properties.get(f['name'], {}) for f in fields},
        },
        'required': [operation_field, *(f['name'] for f in fields if f['required'])],
    }
    if 'additionalProperties' in schema:
        derived['additionalProperties'] = schema['additionalProperties']
    if description:
        derived['description'] = description
    if '$defs' in schema:
        derived['$defs'] = schema['$defs']
    return derived


class _Anything:
    """Absorbs whatever a transform does with a field value."""

    __slots__ = ()

    def __getattr__(self, name: str) -> _Anything:
        return self

    def __call__(self, *args: Any, **kwargs: Any) -> _Anything:
        return self

    def __getitem__(self, key: Any) -> _Anything:
        return self

    def __iter__(self) -> Any:
        return iter(())

    def __len__(self) -> int:
        return 0

    def __int__(self) -> int:
        return 0

    def __float__(self) -> float:
        return 0.0

    def __index__(self) -> int:
        return 0

    def __str__(self) -> str:
        return ''

    def __format__(self, spec: str) -> str:
        return ''

    def __add__(self, other: Any) -> _Anything:
        return self

    __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = __add__
    __floordiv__ = __mod__ = __pow__ = __and__ = __or__ = __neg__ = __pos__ = __abs__ = __add__


_ANYTHING = _Anything()


class _Recorder:
    """Stands in for the validated input and records which attributes are read."""

    __slots__ = ('_operation', '_operation_field', 'read')

    def __init__(self, operation_field: str, operation: str) -> None:
        self._operation_field = operation_field
        self._operation = operation
        self.read: set[str] = set()

    def __getattr__(self, name: str) -> Any:
        if name == self._operation_field:
            return self._operation
        self.read.add(name)
        return _ANYTHING


def probe_transform(transform: Transform, operation_field: str, operation: str) -> set[str] | None:
    """The attributes `transform` reads from its input, or `None` when it raises.

    The transform gets a stand-in whose operation field is `operation` and whose other attributes
    absorb any use, so a pure transform runs to the end and every field it reads is recorded.
    """
    recorder = _Recorder(operation_field, operation)
    try:
        result = transform(recorder)
    except Exception:
        return None
    if inspect.iscoroutine(result):
        result.close()
    return recorder.read
