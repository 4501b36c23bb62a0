"""Importing the modules that register agentools, for `agentool.mcp.serve` and the `agentool` command."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Generator
from contextlib import contextmanager

from ._options import check_strings
from .errors import ConfigurationError


def import_modules(modules: object, *, option: str = 'modules') -> None:
    """Import each of `modules` (a list of names; a lone string is refused, it is not a list).

    A module that cannot be imported, whatever it raised, is a `ConfigurationError` whose `details`
    have `module` and `cause`.
    """
    for module in check_strings(option, modules):
        try:
            importlib.import_module(module)
        except Exception as error:  # a module's own code may raise anything while it registers agentools
            cause = type(error).__name__
            raise ConfigurationError(
                f'cannot import module {module!r}: {cause}: {error}', module=module, cause=cause
            ) from error


@contextmanager
def without_working_directory() -> Generator[None]:
    """`sys.path` without the working directory inside the block, for the server's own imports.

    An optional dependency the server probes for (`httptools`) must never be a `./httptools.py`.
    """
    here = os.getcwd()
    saved = list(sys.path)
    sys.path[:] = [entry for entry in saved if entry not in ('', '.', here)]
    try:
        yield
    finally:
        sys.path[:] = saved + [entry for entry in sys.path if entry not in saved]
