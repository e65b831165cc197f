"""Strict field check of the built-in kinds over a whole benchmark snapshot.

Why: every object read from a file goes through :func:`crds.builtin.check` (the API
server's strict field validation for Pod, Node, Job, ...); on the 1,000-node / 20,000-pod
snapshot that ``podmuster schedule`` is held to 2 s wall on (issue 20), 36,691 objects, the
check is part of that budget. This times the check alone over those objects (the same
objects :mod:`benchmarks.engine` writes for its whole-process runs), CPU time
(``time.process_time``), the collector paused: the first pass, which loads the table (and
compiles what the objects use), then ``--repeat`` runs, with the load average:
the machine is shared. Where the module has one (``crds.builtin.reference_check``), the
table walk the fast path falls back to is timed too, side by side in one process.

Run: ``python -m benchmarks.strict_check [--sizes 1000x20000x5000] [--repeat 3]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any

from benchmarks import generate
from crds import builtin
from crds.documents import gc_paused

Check = Callable[[Mapping[str, Any]], object]


def timed(check: Check, objects: list[dict[str, Any]]) -> float:
    """CPU seconds of ``check`` over every object, the collector paused."""
    with gc_paused():
        cpu = time.process_time()
        for obj in objects:
            check(obj)
        return time.process_time() - cpu


def _load() -> str:
    return ", ".join(f"{v:.2f}" for v in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000x20000x5000", help="NODESxPODSxPENDING")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    nodes, pods, pending = (int(x) for x in args.sizes.split("x"))
    objects = generate.cluster(nodes, pods, pending)
    first = timed(builtin.check, objects)  # loads the table (and compiles what it uses)
    checked = [o for o in objects if f"{o['apiVersion']}/{o['kind']}" in builtin.kinds()]
    problems = [builtin.check(o) for o in objects if builtin.check(o) is not None]
    if problems:
        print(f"the snapshot does not pass the check: {problems[0]}", file=sys.stderr)
        return 1
    variants: dict[str, Check] = {"check": builtin.check}
    reference = getattr(builtin, "reference_check", None)
    if reference is not None:
        variants["reference_check"] = reference
    print(f"load average {_load()}")
    print(
        f"{nodes} nodes / {pods} pods: {len(objects)} objects, {len(checked)} of built-in "
        f"kinds; CPU s over all objects, {args.repeat} runs (interleaved)"
    )
    print(f"  first pass       {first:.3f} s  (the table loaded, first use)")
    runs: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(args.repeat):
        for name, check in variants.items():
            runs[name].append(timed(check, objects))
    for name, times in runs.items():
        median = statistics.median(times)
        each = " ".join(f"{t:.3f}" for t in times)
        per = median / len(checked) * 1e6
        print(f"  {name:16s} median {median:.3f} s  ({each})  {per:.2f} us per built-in object")
    print(f"load average {_load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
