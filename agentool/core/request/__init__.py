"""How one request runs: the pieces the manager and every surface share on the way to a tool.

The rest of agentool imports these names from here, never from the private modules.
"""

from . import _call_args, _context, _gate, _in_effect, _input_errors, _json, _missing_deps, _tool_errors
from ._call_args import *  # noqa: F403
from ._context import *  # noqa: F403
from ._gate import *  # noqa: F403
from ._in_effect import *  # noqa: F403
from ._input_errors import *  # noqa: F403
from ._json import *  # noqa: F403
from ._missing_deps import *  # noqa: F403
from ._tool_errors import *  # noqa: F403
from .durability import active_dispatcher, dispatching, is_durable

__all__: list[str] = ['active_dispatcher', 'dispatching', 'is_durable']
__all__ += _call_args.__all__
__all__ += _context.__all__
__all__ += _gate.__all__
__all__ += _in_effect.__all__
__all__ += _input_errors.__all__
__all__ += _json.__all__
__all__ += _missing_deps.__all__
__all__ += _tool_errors.__all__
