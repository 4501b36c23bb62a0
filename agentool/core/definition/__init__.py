"""What an agentool is: its configuration (`config`), and what agentool reads from it once, at creation:
tool signatures and metadata, each operation's requirements and compiled routes (imported from here).
"""

from . import _requirements, _routes, _signature, config
from ._requirements import *  # noqa: F403
from ._routes import *  # noqa: F403
from ._signature import *  # noqa: F403
from .config import *  # noqa: F403

__all__: list[str] = []
__all__ += config.__all__
__all__ += _signature.__all__
__all__ += _requirements.__all__
__all__ += _routes.__all__
