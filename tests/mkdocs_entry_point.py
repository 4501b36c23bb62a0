"""The `agentool` MkDocs plugin findable by name, even in a venv installed before it had an entry point.

`pip install agentool` registers `agentool = agentool.mkdocs:AgenToolPlugin` under `mkdocs.plugins`
(pyproject.toml). A venv installed from an older checkout lacks it; then a throwaway distribution
declaring only that entry point is written to a temporary folder, whose path `entry_point_paths`
returns to put on the import path. MkDocs reads the entry points once, when `mkdocs.config` is
first imported, so tests/conftest.py adds it before any test module imports MkDocs.
"""

from __future__ import annotations

import os
import tempfile
from importlib.metadata import entry_points
from pathlib import Path

ENTRY_POINT = 'agentool.mkdocs:AgenToolPlugin'
_STAND_IN = 'agentool-mkdocs-entry-point'
_FILES = {
    'METADATA': f'Metadata-Version: 2.1\nName: {_STAND_IN}\nVersion: 0\n',
    'entry_points.txt': f'[mkdocs.plugins]\nagentool = {ENTRY_POINT}\n',
}


def entry_point_paths() -> list[str]:
    """The folders to add to the import path so MkDocs finds the plugin (none when it is installed)."""
    installed = [
        ep
        for ep in entry_points(group='mkdocs.plugins')
        if ep.name == 'agentool' and ep.value == ENTRY_POINT and (ep.dist is None or ep.dist.name != _STAND_IN)
    ]
    if installed:
        return []
    folder = Path(tempfile.gettempdir()) / f'agentool-mkdocs-entry-point-{os.getuid()}'
    info = folder / 'agentool_mkdocs_entry_point-0.dist-info'
    info.mkdir(parents=True, exist_ok=True)
    for name, text in _FILES.items():
        partial = info / f'{name}.{os.getpid()}'
        partial.write_text(text)
        partial.replace(info / name)  # atomic: test workers write it at the same time
    return [str(folder)]
