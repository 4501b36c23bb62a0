"""The catalog: what a registry holds, as JSON-serialisable data in a deterministic order.

Agentools are sorted by name, everything else keeps its given order; only `generated_at` depends on time.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, NotRequired, Protocol, TypedDict, runtime_checkable

from pydantic import BaseModel, TypeAdapter

from .._options import check_instance, check_string_or_strings, check_text
from ..core.definition import UNREADABLE, extract_tool_metadata, read_signature
from ..core.output import output_value_type
from ..errors import ConfigurationError, clip
from ._fields import (
    CatalogField,
    FieldsSource,
    JsonSchemaGenerator,
    field_wording,
    json_value,
    operation_fields,
    operation_request_schema,
    schema_key,
    type_label,
)

if TYPE_CHECKING:
    from ..core.definition import AgenToolConfig, ToolMetadata
    from ..core.registry import AgenToolRegistry

__all__ = (
    'CATALOG_VERSION',
    'Catalog',
    'CatalogEntry',
    'CatalogDetails',
    'CatalogOperation',
    'CatalogField',
    'CatalogTool',
    'CatalogToolSummary',
    'FieldsSource',
    'check_registry',
    'field_wording',
    'operation_hints',
    'catalog_entry',
    'list_detailed',
    'export_catalog',
    'search',
    'input_schema',
    'operations',
    'tools_info',
    'tool_names',
    'operation_request_schema',
    'JsonSchemaGenerator',
    'type_label',
)

CATALOG_VERSION = '1'
"""Version of the catalog's format (the `catalog_version` key of `export_catalog()`)."""

GUIDE_CATALOG_VERSION = '1.0.0'
"""The `version` key of `export_catalog()`, as the architecture guide's catalogs carry it."""


@runtime_checkable
class _Registry(Protocol):
    """What the catalog reads from a registry, recognised by its methods: the registry module imports the catalog."""

    def list_names(self) -> list[str]: ...

    def require(self, name: str) -> AgenToolConfig: ...


def check_registry(registry: object) -> None:
    """Raise `ConfigurationError` unless `registry` is a registry."""
    check_instance('registry', registry, _Registry, expected='an AgenToolRegistry')


class CatalogOperation(TypedDict):
    """One operation: its route, the tool it calls, the fields it uses and its metadata."""

    name: str
    tool: str
    description: str | None
    """The route's description, else the tool's docstring."""
    tool_description: str | None
    parameters: list[str]
    """The tool's parameter names (without `RunContext`); `[]` when the tool is not known."""
    returns: str | None
    fields: list[CatalogField]
    fields_source: FieldsSource
    """How `fields` were found: names matched to the tool, read by the transform, or the whole schema."""
    request_schema: dict[str, Any]
    """JSON schema of an input for this operation alone (the operation field fixed to its value)."""
    read_only: bool
    idempotent: bool
    destructive: bool
    concurrent_safe: bool
    max_output_chars: int | None
    tags: list[str]
    deprecated: bool


class CatalogTool(TypedDict):
    """One tool function of an agentool."""

    name: str
    description: str | None
    is_async: bool
    parameters: list[str]
    parameter_types: dict[str, str]
    return_type: str | None
    operations: list[str]


class CatalogEntry(TypedDict):
    """Everything the catalog says about one agentool."""

    name: str
    description: str | None
    version: str
    tags: list[str]
    dependencies: list[str]
    examples: list[Any]
    operation_field: str
    input_schema: dict[str, Any]
    output_type: str | None
    """`None` when the output is untyped (JSON text)."""
    output_schema: dict[str, Any] | None
    operations: list[CatalogOperation]
    tools: list[CatalogTool]


CatalogToolSummary = TypedDict(
    'CatalogToolSummary', {'name': str, 'async': bool, 'params': list[str], 'description': str | None}
)
"""A tool in `list_detailed()`, in the architecture guide's short form (`async` is a keyword, hence this form)."""


class CatalogDetails(TypedDict):
    """One agentool in `list_detailed()`: the guide's summary form, plus the registration timestamps.

    `operations` are names; `examples` is present only when there are some.
    """

    name: str
    description: str | None
    version: str
    tags: list[str]
    dependencies: list[str]
    operations: list[str]
    tools: list[CatalogToolSummary]
    input_schema: dict[str, Any]
    output_type: str | None
    examples: NotRequired[list[Any]]
    created_at: str
    """ISO 8601."""
    updated_at: str
    """ISO 8601."""


class Catalog(TypedDict):
    """The whole catalog of a registry."""

    version: str
    """`'1.0.0'`, as in the architecture guide."""
    catalog_version: str
    generated_at: str
    """When this catalog was made (ISO 8601, UTC): the only key that depends on time."""
    total_agentools: int
    agentools: list[CatalogEntry]


def catalog_entry(registry: AgenToolRegistry, name: str) -> CatalogEntry:
    """The catalog entry of agentool `name`, from its configuration (one that cannot run is described)."""
    check_registry(registry)
    config = registry.require(name)
    schema = _input_schema(config)
    value_type = output_value_type(config.output_type)  # the types inside a spec
    return CatalogEntry(
        name=name,
        description=config.description,
        version=config.version,
        tags=list(config.tags),
        dependencies=list(dict.fromkeys(config.dependencies)),
        examples=[json_value(example) for example in config.examples],  # one odd example spoils no other
        operation_field=_operation_key(config, schema),
        input_schema=schema,
        output_type=None if value_type is None else type_label(value_type),
        output_schema=None if value_type is None else _output_schema(name, value_type),
        operations=list(_operations(config, schema).values()),
        tools=tools_info(registry, name),
    )


def _output_schema(name: str, value_type: Any) -> dict[str, Any]:
    """The JSON schema of an output type; one pydantic cannot describe is a `ConfigurationError`."""
    try:
        return TypeAdapter[Any](value_type).json_schema(mode='serialization', schema_generator=JsonSchemaGenerator)
    except UNREADABLE as error:
        raise ConfigurationError(
            f'agentool {name!r}: its output type {type_label(value_type)} has no JSON schema, so no catalog can '
            f'describe it: {clip(str(error))}',
            agentool=name,
            option='output_type',
            output_type=type_label(value_type),
        ) from None


def list_detailed(registry: AgenToolRegistry) -> list[CatalogDetails]:
    """Every agentool in the guide's summary form (operation names, short tool entries), sorted by name."""
    check_registry(registry)
    details: list[CatalogDetails] = []
    for name in registry.list_names():
        config = registry.require(name)
        entry = catalog_entry(registry, name)
        tools: list[CatalogToolSummary] = [
            {
                'name': meta.name,
                'async': meta.is_async,
                'params': list(meta.parameters),
                'description': meta.description,
            }
            for meta in _tool_metadata(config).values()
        ]
        detail = CatalogDetails(
            name=name,
            description=entry['description'],
            version=entry['version'],
            tags=entry['tags'],
            dependencies=entry['dependencies'],
            operations=[operation['name'] for operation in entry['operations']],
            tools=tools,
            input_schema=entry['input_schema'],
            output_type=entry['output_type'],
            created_at=config.created_at.isoformat(),
            updated_at=config.updated_at.isoformat(),
        )
        if entry['examples']:
            detail['examples'] = entry['examples']
        details.append(detail)
    return details


def export_catalog(registry: AgenToolRegistry) -> Catalog:
    """The whole catalog: every agentool's entry, sorted by name."""
    check_registry(registry)
    entries = [catalog_entry(registry, name) for name in registry.list_names()]
    return Catalog(
        version=GUIDE_CATALOG_VERSION,
        catalog_version=CATALOG_VERSION,
        generated_at=datetime.now(UTC).isoformat(),
        total_agentools=len(entries),
        agentools=entries,
    )


def search(registry: AgenToolRegistry, tags: Sequence[str] | None = None, name_pattern: str | None = None) -> list[str]:
    """Names of the agentools that match every criterion given, sorted (see "The registry" page)."""
    check_registry(registry)
    wanted: set[str] = set() if tags is None else set(check_string_or_strings('tags', tags))
    check_text('name_pattern', name_pattern, optional=True)
    pattern = (name_pattern or '').lower()
    glob = any(char in pattern for char in '*?[')
    found: list[str] = []
    for name in registry.list_names():
        config = registry.require(name)
        if pattern and not (fnmatch.fnmatchcase(name.lower(), pattern) if glob else pattern in name.lower()):
            continue
        route_tags = {tag for route in config.routing_config.operation_map.values() for tag in route.tags}
        if wanted and wanted.isdisjoint({*config.tags, *route_tags}):
            continue
        found.append(name)
    return found


def input_schema(registry: AgenToolRegistry, name: str) -> dict[str, Any]:
    """The JSON schema of agentool `name`'s input."""
    check_registry(registry)
    return _input_schema(registry.require(name))


def _input_schema(config: AgenToolConfig) -> dict[str, Any]:
    if config.input_schema is BaseModel:  # the guide's placeholder for "no fields"; pydantic gives it no schema
        return {'properties': {}, 'title': 'BaseModel', 'type': 'object'}
    return config.input_schema.model_json_schema(schema_generator=JsonSchemaGenerator)


def operations(registry: AgenToolRegistry, name: str) -> dict[str, CatalogOperation]:
    """Operation → its catalog description, in routing order."""
    check_registry(registry)
    config = registry.require(name)
    return _operations(config, _input_schema(config))


def _operations(config: AgenToolConfig, schema: dict[str, Any]) -> dict[str, CatalogOperation]:
    tools = {signature.name: signature for signature in map(read_signature, config.tools)}
    metadata = _tool_metadata(config)
    key = _operation_key(config, schema)
    properties: dict[str, Any] = schema.get('properties', {})
    described: dict[str, CatalogOperation] = {}
    for op, route in config.routing_config.operation_map.items():
        tool, meta = tools.get(route.tool), metadata.get(route.tool)
        docstring = (meta.docstring or meta.description) if meta else (tool.docstring if tool else None)
        operation_field = config.routing_config.operation_field
        fields, source, needed = operation_fields(config.input_schema, operation_field, tool, op, route, properties)
        description = route.description or docstring
        returns = meta.return_type_annotation if meta else None
        described[op] = CatalogOperation(
            name=op,
            tool=route.tool,
            description=description,
            tool_description=docstring,
            parameters=list(meta.parameters) if meta else (list(tool.params) if tool else []),
            returns=None if returns is None else type_label(returns),
            fields=fields,
            fields_source=source,
            request_schema=operation_request_schema(schema, key, op, fields, description, needed),
            read_only=route.read_only,
            idempotent=route.idempotent,
            destructive=route.destructive,
            concurrent_safe=route.concurrent_safe,
            max_output_chars=route.max_output_chars,
            tags=list(route.tags),
            deprecated=route.deprecated,
        )
    return described


def operation_hints(operation: CatalogOperation) -> list[str]:
    """An operation's hints in words, as every catalog view says them: `read-only`, `idempotent`, ..."""
    flags = [('read-only', operation['read_only']), ('idempotent', operation['idempotent'])]
    flags += [('destructive', operation['destructive']), ('not concurrency-safe', not operation['concurrent_safe'])]
    hints = [label for label, on in flags if on]
    if (limit := operation['max_output_chars']) is not None:
        hints.append(f'output cut at {limit} characters')
    return hints


def _operation_key(config: AgenToolConfig, schema: dict[str, Any]) -> str:
    field = config.routing_config.operation_field
    info = config.input_schema.model_fields.get(field)
    # A computed field or property is not an input: its own name is the key.
    return field if info is None else schema_key(field, info, schema.get('properties', {}))


def _tool_metadata(config: AgenToolConfig) -> dict[str, ToolMetadata]:
    metadata = config.tools_metadata
    if not metadata and config.tools:
        metadata = [extract_tool_metadata(tool) for tool in config.tools]
    return {meta.name: meta for meta in metadata}


def tools_info(registry: AgenToolRegistry, name: str) -> list[CatalogTool]:
    """The tool functions of agentool `name`, in the order they were given."""
    check_registry(registry)
    config = registry.require(name)
    routed: dict[str, list[str]] = {}
    for op, route in config.routing_config.operation_map.items():
        routed.setdefault(route.tool, []).append(op)
    return [
        CatalogTool(
            name=meta.name,
            description=meta.docstring or meta.description,
            is_async=meta.is_async,
            parameters=list(meta.parameters),
            parameter_types=dict(meta.parameter_types),
            return_type=meta.return_type,
            operations=routed.get(meta.name, []),
        )
        for meta in _tool_metadata(config).values()
    ]


def tool_names(config: AgenToolConfig) -> list[str]:
    """Names of an agentool's tool functions, in the order they were given."""
    return list(_tool_metadata(config))
