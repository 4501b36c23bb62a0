"""The catalog as an OpenAPI document: 3.0.0 by default, as the architecture guide's, or 3.1.0.

`POST /agentools/{name}` per agentool and `POST /agentools/{name}/{operation}` per operation;
shared models under `components/schemas`, route metadata under `x-agentool`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, get_args
from urllib.parse import quote

from pydantic import TypeAdapter

from .._options import check_choice, check_text
from ..core.output import output_value_type
from ._openapi30 import schema_30
from .data import JsonSchemaGenerator, check_registry, export_catalog, operation_request_schema

if TYPE_CHECKING:
    from ..core.registry import AgenToolRegistry

__all__ = ('openapi_spec', 'OPENAPI_VERSION', 'OPENAPI_VERSIONS', 'OpenAPIVersion')

OpenAPIVersion = Literal['3.0.0', '3.1.0']
OPENAPI_VERSION: OpenAPIVersion = '3.0.0'
"""The default OpenAPI version, the architecture guide's."""
OPENAPI_VERSIONS: tuple[OpenAPIVersion, ...] = get_args(OpenAPIVersion)

_REF_PREFIX = '#/components/schemas/'
_ERROR_SCHEMA: dict[str, Any] = {
    'type': 'object',
    'description': 'An agentool error: its class, message and structured details.',
    'properties': {
        'error': {'type': 'string', 'description': 'The error class, e.g. `InputValidationError`.'},
        'message': {'type': 'string'},
        'details': {'type': 'object'},
    },
    'required': ['error', 'message'],
}
_UNTYPED_OUTPUT: dict[str, Any] = {'description': 'Any JSON value: the agentool declares no output type.'}
_HINTS = ('read_only', 'idempotent', 'destructive', 'concurrent_safe', 'max_output_chars', 'tags')


def openapi_spec(
    registry: AgenToolRegistry,
    *,
    title: str = 'AgenTool Registry API',
    version: str = '1.0.0',
    description: str | None = None,
    openapi_version: OpenAPIVersion = OPENAPI_VERSION,
) -> dict[str, Any]:
    """An OpenAPI document for every agentool in `registry` (JSON-serialisable, deterministic)."""
    check_registry(registry)
    check_text('title', title)
    check_text('version', version)
    check_text('description', description, optional=True)
    check_choice('openapi_version', openapi_version, OPENAPI_VERSIONS, why=' (this generator writes no other)')
    # Rewritten where each schema is made, so the rewrite sees schemas only; 3.1 takes them as they are.
    dialect: Callable[[dict[str, Any]], dict[str, Any]] = schema_30 if openapi_version == '3.0.0' else dict[str, Any]
    entries = export_catalog(registry)['agentools']
    inputs, outputs, components = _schemas(registry, [entry['name'] for entry in entries])
    outputs = {name: dialect(schema) for name, schema in outputs.items()}
    error_name = _unique('AgenToolError', components)
    components[error_name] = _ERROR_SCHEMA
    error_ref = {'$ref': _REF_PREFIX + error_name}
    paths: dict[str, Any] = {}
    operation_ids: set[str] = set()
    for entry in entries:
        name = entry['name']
        base = f'/agentools/{quote(name, safe="")}'
        responses = _responses(outputs.get(name), error_ref)
        paths[base] = {
            'post': {
                'operationId': _unique(f'execute_{name}', operation_ids),
                'summary': entry['description'] or f'Execute {name} AgenTool',
                **({'description': entry['description']} if entry['description'] else {}),
                'tags': list(entry['tags']),
                'requestBody': _body({'$ref': inputs[name]}),
                'responses': responses,
                'x-agentool': {'agentool': name, 'version': entry['version'], 'tags': entry['tags']},
            }
        }
        input_definition = components[inputs[name].removeprefix(_REF_PREFIX)]
        for operation in entry['operations']:
            op = operation['name']
            schema = operation_request_schema(
                input_definition,
                entry['operation_field'],
                op,
                operation['fields'],
                operation['description'],
                _non_null(operation['request_schema']),
            )
            paths[f'{base}/{quote(op, safe="")}'] = {
                'post': {
                    'operationId': _unique(f'{name}_{op}', operation_ids),
                    'summary': f'{name}: {op}',
                    **({'description': operation['description']} if operation['description'] else {}),
                    'tags': list(dict.fromkeys([op, *entry['tags']])),
                    'requestBody': _body(dialect(schema)),
                    'responses': responses,
                    **({'deprecated': True} if operation['deprecated'] else {}),
                    'x-agentool': {
                        'agentool': name,
                        'operation': op,
                        'tool': operation['tool'],
                        **{key: operation[key] for key in _HINTS},
                    },
                }
            }
    info: dict[str, Any] = {'title': title, 'version': version}
    if description:
        info['description'] = description
    return {
        'openapi': openapi_version,
        'info': info,
        'tags': [{'name': tag} for tag in sorted({tag for entry in entries for tag in entry['tags']})],
        'paths': paths,
        'components': {'schemas': {name: dialect(schema) for name, schema in sorted(components.items())}},
    }


def _schemas(registry: AgenToolRegistry, names: list[str]) -> tuple[dict[str, str], dict[str, Any], dict[str, Any]]:
    """Input `$ref`s and output schemas by agentool, and the shared component schemas."""
    adapters: list[tuple[tuple[str, str], Any, TypeAdapter[Any]]] = []
    for name in names:
        config = registry.require(name)
        adapters.append(((name, 'input'), 'validation', TypeAdapter[Any](config.input_schema)))
        if (value_type := output_value_type(config.output_type)) is not None:  # the types inside a spec
            adapters.append(((name, 'output'), 'serialization', TypeAdapter[Any](value_type)))
    schemas, definitions = TypeAdapter.json_schemas(
        adapters, ref_template=_REF_PREFIX + '{model}', schema_generator=JsonSchemaGenerator
    )
    components: dict[str, Any] = dict(definitions.get('$defs', {}))
    inputs: dict[str, str] = {}
    outputs: dict[str, Any] = {}
    for ((name, kind), _mode), schema in schemas.items():
        if kind == 'output':
            outputs[name] = schema
        else:  # an input model always becomes a component
            inputs[name] = schema['$ref']
    return inputs, outputs, components


def _non_null(request_schema: dict[str, Any]) -> list[str]:
    """The keys the catalog's request schema gives no `null` branch: those the operation needs a value for."""
    properties: dict[str, Any] = request_schema.get('properties', {})
    return [key for key, prop in properties.items() if {'type': 'null'} not in prop.get('anyOf', [])]


def _body(schema: dict[str, Any]) -> dict[str, Any]:
    return {'required': True, 'content': {'application/json': {'schema': schema}}}


def _responses(output: dict[str, Any] | None, error_ref: dict[str, Any]) -> dict[str, Any]:
    return {
        '200': {
            'description': 'The typed output of the operation.',
            'content': {'application/json': {'schema': _UNTYPED_OUTPUT if output is None else output}},
        },
        '400': {
            'description': 'Invalid input (`InvalidInputError`): bad JSON, unknown operation, invalid fields.',
            'content': {'application/json': {'schema': error_ref}},
        },
    }


def _unique(candidate: str, taken: set[str] | dict[str, Any]) -> str:
    """`candidate`, or `candidate_2`, `candidate_3`… whichever is not taken yet; a set records it."""
    name, counter = candidate, 1
    while name in taken:
        counter += 1
        name = f'{candidate}_{counter}'
    if isinstance(taken, set):
        taken.add(name)
    return name
