"""Catalog rendering: what a registry holds, as data, Markdown, a Mermaid graph and OpenAPI.

Every function takes the registry as an argument, so the registry can delegate here without an
import circle.
"""

from .data import (
    CATALOG_VERSION,
    Catalog,
    CatalogDetails,
    CatalogEntry,
    CatalogField,
    CatalogOperation,
    CatalogTool,
    CatalogToolSummary,
    FieldsSource,
    JsonSchemaGenerator,
    catalog_entry,
    export_catalog,
    input_schema,
    list_detailed,
    operation_request_schema,
    operations,
    search,
    tool_names,
    tools_info,
    type_label,
)
from .graph import DependencyGraph, dependency_graph, mermaid_graph
from .markdown import agentool_markdown, markdown_docs, operation_markdown
from .openapi import openapi_spec

__all__ = (
    'CATALOG_VERSION',
    'Catalog',
    'CatalogDetails',
    'CatalogEntry',
    'CatalogField',
    'CatalogOperation',
    'CatalogTool',
    'CatalogToolSummary',
    'DependencyGraph',
    'FieldsSource',
    'JsonSchemaGenerator',
    'agentool_markdown',
    'catalog_entry',
    'dependency_graph',
    'export_catalog',
    'input_schema',
    'list_detailed',
    'markdown_docs',
    'mermaid_graph',
    'openapi_spec',
    'operation_markdown',
    'operation_request_schema',
    'operations',
    'search',
    'tool_names',
    'tools_info',
    'type_label',
)
