"""Benchmarks: they report ratios and never assert.

`make bench` (`python -m bench`) runs them all and writes one table to docs/benchmarks.md;
`python -m bench.bench_injector` prints the injector's own detailed report.
"""
