"""Running one documented code block so that its failure always reaches the report.

pytest-examples gives a failing block's exception a traceback rewritten to point into the
Markdown page, made of frames whose line tables do not match their code on Python 3.11. pytest
(9.2) reads those tables to show a traceback entry, through the standard library's
`extract_tb` and `TracebackException`, which then raise `StopIteration`: an INTERNALERROR that
hides the block's failure and, under xdist, takes its worker down (an MCP client timing out on
its server's start was hidden that way). So a failing block is re-raised as an `AssertionError`
naming the block and the page lines it went through, caused by the block's exception without the
rewritten traceback (the exceptions it chains keep their own).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_examples import CodeExample, EvalExample

__all__ = ('run_block',)


def run_block(eval_example: EvalExample, example: CodeExample, namespace: dict[str, Any]) -> dict[str, Any]:
    """Run `example` in `namespace` with its `#>` outputs checked; the namespace after it."""
    __tracebackhide__ = True
    try:
        return eval_example.run_print_check(example, module_globals=namespace)
    except Exception as error:
        lines = [f'the block at {example.path.name}:{example.start_line} raised {type(error).__name__}: {error}']
        traceback = error.__traceback__
        while traceback is not None:  # line numbers only: reading the frames' line tables is what fails
            code = traceback.tb_frame.f_code
            if Path(code.co_filename) == example.path:  # the page's frames, not the runner's above them
                lines.append(f'  {example.path.name}:{traceback.tb_lineno} in {code.co_name}')
            traceback = traceback.tb_next
        raise AssertionError('\n'.join(lines)) from error.with_traceback(None)
