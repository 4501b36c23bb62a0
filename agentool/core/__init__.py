"""The routing core the architecture guide names: what an agentool is and how one request runs.

- `config`: the data that defines an agentool (`RoutingConfig`, `Route`, `AgenToolConfig`, `ToolMetadata`);
- `manager`: validates input and routes it to a typed tool (`_routes` compiles the routes once);
- `registry`: agentool configurations by name, with their managers, and the scopes that isolate them;
- `model`: `AgenToolModel`, the synthetic pydantic-ai model (`_answering` holds the request/stream
  plumbing it shares with the test double, `_output` the final response in every output mode);
- `capability`: the manager tool, `AgenToolCapability` and the agent builder.

Imports point down: nothing here imports the injector (`agentool.core.injector`, a package above
this one) or the catalog renderers (`agentool.catalog`), except the registry's one deferred import
of the renderers. `catalog`, `markdown`, `graph`, `openapi` and `handle` here are aliases of modules
that moved; new code imports them from their new homes.

The guide's component names are importable from here too (`from agentool.core import AgenToolRegistry`).
"""

from .config import AgenToolConfig, RoutingConfig, ToolMetadata
from .manager import AgenToolManager
from .model import AgenToolModel
from .registry import AgenToolRegistry

__all__ = ('AgenToolConfig', 'AgenToolManager', 'AgenToolModel', 'AgenToolRegistry', 'RoutingConfig', 'ToolMetadata')
