"""A documented block that fails is reported as a failure naming its page lines, never an INTERNALERROR.

`tests/_doc_blocks.run_block` runs the docs' blocks (tests/test_docs.py); pytest-examples' rewritten
traceback made pytest's formatting of a failure raise `StopIteration` (an MCP client that timed out
starting its server hid its error that way and took an xdist worker down).
"""

from __future__ import annotations

import pytest

pytest_plugins = ('pytester',)

PAGE = """# A page

```python
def start() -> None:
    raise ExceptionGroup('unhandled errors in a TaskGroup', [TimeoutError('server did not answer')])


start()
```

```python
try:
    raise ExceptionGroup('unhandled errors in a TaskGroup', [TimeoutError('server did not answer')])
except ExceptionGroup as group:
    raise RuntimeError('failed to connect') from group
```
"""

RUNNER = """
from pathlib import Path

import pytest
from pytest_examples import find_examples

from tests._doc_blocks import run_block

BLOCKS = list(find_examples(Path(__file__).parent / 'page.md'))


@pytest.mark.parametrize('index', range(len(BLOCKS)))
def test_block(eval_example, index):
    run_block(eval_example, BLOCKS[index], {'ExceptionGroup': ExceptionGroup})
"""


def test_a_block_raising_an_exception_group_fails_with_its_errors_shown(pytester: pytest.Pytester) -> None:
    pytester.makefile('.md', page=PAGE)
    pytester.makepyfile(test_page=RUNNER)
    result = pytester.runpytest_subprocess('-p', 'no:cacheprovider', '-p', 'no:randomly', '-n', '0')
    text = result.stdout.str() + result.stderr.str()
    assert 'INTERNALERROR' not in text
    assert 'StopIteration' not in text
    result.assert_outcomes(failed=2)
    assert 'server did not answer' in text  # the error inside the group
    assert 'the block at page.md:3 raised ExceptionGroup' in text
    assert 'page.md:8 in <module>\n' in text  # the page lines it went through
    assert 'page.md:5 in start' in text
    assert 'the block at page.md:11 raised RuntimeError: failed to connect' in text
    assert 'page.md:15 in <module>' in text


def test_a_plain_failure_names_its_line_of_the_page(pytester: pytest.Pytester) -> None:
    pytester.makefile('.md', page='# A page\n\n```python\nraise ValueError("plain")\n```\n')
    pytester.makepyfile(test_page=RUNNER)
    result = pytester.runpytest_subprocess('-p', 'no:cacheprovider', '-p', 'no:randomly', '-n', '0')
    text = result.stdout.str() + result.stderr.str()
    assert 'INTERNALERROR' not in text
    result.assert_outcomes(failed=1)
    assert 'the block at page.md:3 raised ValueError: plain' in text
    assert 'page.md:4 in <module>' in text
