"""Benchmarks: run with ``python -m benchmarks.<name>``; not part of the test run."""
