"""The `agentool` console script: usage and `--help` at once, pydantic-ai only for a command that needs it.

Importing `agentool.cli` the ordinary way runs `agentool/__init__.py`, which imports pydantic-ai
(seconds on a busy machine) to check its release and install the `agentool:` model-string hook.
A user asking for `--help`, or mistyping an option, needs none of that. So this launcher puts the
`agentool` package in `sys.modules` *without running its `__init__`*, imports `agentool.cli` (which
imports only the standard library and `agentool._bounds` at module level), and lets `agentool.cli`
run the package's `__init__` once the arguments are parsed and a command is about
to run. In a program that imported `agentool` already, all of this is a no-op.
"""

from __future__ import annotations

import importlib.util
import sys

__all__ = ('main', 'DEFERRED')

DEFERRED = '__agentool_deferred__'
"""Set on the package while its `__init__` has not run; `agentool.cli` runs it and removes this."""


def _defer_package() -> None:
    if 'agentool' in sys.modules:
        return
    spec = importlib.util.find_spec('agentool')
    if spec is None or spec.loader is None:
        return  # not importable: the import below reports it
    package = importlib.util.module_from_spec(spec)
    setattr(package, DEFERRED, True)
    sys.modules['agentool'] = package


def main() -> int:
    """The console script: `agentool.cli.main()` on `sys.argv[1:]`, with the package's import deferred."""
    _defer_package()
    from agentool.cli import main as cli_main

    return cli_main()
