"""One edit to a copy of a manifest, for tests that break one field at a time.

Why: the bad-input tests (the built-in kinds' field checks, the adapters' malformed
workloads) each take a good object and change one field; one helper does it for all.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any


def replaced(obj: dict[str, Any], path: Sequence[str | int], value: Any) -> dict[str, Any]:
    """A deep copy of ``obj`` with the field at ``path`` (keys and list indexes, which must
    exist up to the last) set to ``value``; ``obj`` is left as it was."""
    result = copy.deepcopy(obj)
    parent: Any = result
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = value
    return result
