"""The guide "Testing LLM agents with agentool" runs as written: its blocks in order, its printed output checked.

`pytest --update-examples` rewrites the `#>` output comments after a deliberate change.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_examples import EvalExample, find_examples

GUIDE = Path(__file__).resolve().parent.parent / 'docs' / 'guides' / 'testing-llm-agents.md'


def test_the_guide_runs_as_written(eval_example: EvalExample) -> None:
    namespace: dict[str, Any] = {}
    blocks = [e for e in find_examples(GUIDE) if e.prefix_settings().get('test') != 'skip' and e.prefix != 'toml']
    assert len(blocks) >= 8
    for example in blocks:
        if eval_example.update_examples:
            namespace = eval_example.run_print_update(example, module_globals=namespace)
        else:
            namespace = eval_example.run_print_check(example, module_globals=namespace)
    # As the guide says: a drift failure is an AssertionError, so pytest reports it as a test failure.
    assert issubclass(namespace['DriftError'], AssertionError)
