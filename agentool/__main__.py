"""`python -m agentool`: the `agentool` command line."""

from __future__ import annotations

from .cli import main

if __name__ == '__main__':
    raise SystemExit(main())
