"""Output: what an output spec stands for and what can produce it, whether a value fits an output
schema, and the final `ModelResponse` in any output mode."""

from . import _fit, _response, _spec
from ._fit import *  # noqa: F403
from ._response import *  # noqa: F403
from ._spec import *  # noqa: F403

__all__: list[str] = []
__all__ += _fit.__all__
__all__ += _response.__all__
__all__ += _spec.__all__
