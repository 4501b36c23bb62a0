"""Where agentool keeps data when no path is given: its folder in the user-data directory (never the cwd)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

__all__ = ('user_data_dir',)


def user_data_dir() -> Path:
    """`agentool/` in the platform's user-data directory; not created here."""
    if sys.platform == 'win32':
        base = Path(os.environ.get('LOCALAPPDATA') or Path.home() / 'AppData' / 'Local')
    elif sys.platform == 'darwin':
        base = Path.home() / 'Library' / 'Application Support'
    else:
        xdg = os.environ.get('XDG_DATA_HOME', '')
        base = Path(xdg) if os.path.isabs(xdg) else Path.home() / '.local' / 'share'
    return base / 'agentool'
