"""Command-line entry point (placeholder until the commands land)."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """Run the podmuster command line."""
    del argv
    print("podmuster: no command yet", file=sys.stderr)
    return 2
