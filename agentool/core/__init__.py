"""The routing core the architecture guide names: what an agentool is and how one request runs.

- `definition`: what an agentool is — its configuration (`definition.config`: `RoutingConfig`,
  `Route`, `AgenToolConfig`, `ToolMetadata`) and what is read from it once, at creation
  (signatures, each operation's requirements, compiled routes, tool metadata);
- `output`: what an output spec stands for, and a tool's return value as the final response in
  every output mode;
- `manager`: validates one request and routes it to a typed tool (with `_input_errors`, `_json`);
- `registry`: agentool configurations by name, with their managers, and the scopes that isolate them;
- `model`: `AgenToolModel`, the synthetic pydantic-ai model; `agent`, `lean`, `capability`: the
  other model surfaces (a plain run without the graph, the manager tool and the agent builder);
- `injector`: running agentools by name and wiring their deps (a package above all of these).

Imports point down: nothing here imports the catalog renderers (`agentool.catalog`) except the
registry's one deferred import of them. The guide's component names are importable from here too
(`from agentool.core import AgenToolRegistry`).
"""

from .definition import AgenToolConfig, RoutingConfig, ToolMetadata
from .manager import AgenToolManager
from .model import AgenToolModel
from .registry import AgenToolRegistry

__all__ = ('AgenToolConfig', 'AgenToolManager', 'AgenToolModel', 'AgenToolRegistry', 'RoutingConfig', 'ToolMetadata')
