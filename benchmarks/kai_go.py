"""KAI's own Go benchmark, built and run beside podmuster's (``make bench-kai``).

Why: a ratio against KAI means something only when both run on the same machine,
under the same load, on the same topologies, and decide the same. This module
takes KAI v0.17.0's source from a git repository (``KAI_GIT``: a local clone or
bare mirror, else GitHub), adds ``kai_go/podmuster_sizes_test.go`` to its
actions package (a benchmark that calls KAI's own topology helpers at any size
and counts the decisions), compiles the package's tests once into a cache
directory, and runs one case at a time with a timeout. Nothing of KAI's is
copied into this repository; the build needs Go and KAI's modules (the Go
module proxy).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

KAI_TAG = "v0.17.0"
KAI_GITHUB = "https://github.com/kai-scheduler/KAI-Scheduler.git"
GO_FILE = Path(__file__).with_name("kai_go") / "podmuster_sizes_test.go"
PACKAGE = "pkg/scheduler/actions"
_LINE = re.compile(r"^BenchmarkPodmusterSizes/(?P<name>\S+?)(-\d+)?\s+\d+\s+(?P<metrics>.*)$")
_METRIC = re.compile(r"([\d.e+]+) (\S+)")


@dataclass(frozen=True)
class GoCase:
    """One case of the Go benchmark: KAI's action(s) on one of its benchmark topologies."""

    name: str
    action: str  # allocate | reclaim | preempt | consolidation | cycle (KAI's five actions)
    kind: str  # pending | running | mixed | manyqueues | gangs
    nodes: int
    jobs: int

    def spec(self) -> str:
        return f"{self.name}:{self.action}:{self.kind}:{self.nodes}:{self.jobs}"


@dataclass(frozen=True)
class GoResult:
    """KAI's wall and CPU time for one run of the case (session build + actions), decisions."""

    seconds: float
    cpu_seconds: float
    binds: int
    evicted: int
    pipelined: int


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "podmuster" / "kai-bench" / KAI_TAG


def unavailable() -> str | None:
    """Why KAI's benchmark cannot be built here, or None."""
    if shutil.which("go") is None:
        return "no go toolchain on PATH"
    if shutil.which("git") is None:
        return "no git on PATH"
    return None


def _checkout(source: str, into: Path) -> None:
    """KAI's tree at :data:`KAI_TAG` from a local repository (bare or not) or a URL."""
    if Path(source).is_dir():
        archive = subprocess.run(
            ["git", "-C", source, "archive", KAI_TAG], check=True, capture_output=True
        ).stdout
        into.mkdir(parents=True)
        subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
        return
    subprocess.run(
        ["git", "clone", "--quiet", "--depth", "1", "--branch", KAI_TAG, source, str(into)],
        check=True,
    )


def build(source: str | None = None, log: bool = True) -> Path:
    """The compiled test binary of KAI's actions package with our benchmark added.

    Built once per cache directory; again when our Go file is newer than the binary.
    Raises ``subprocess.CalledProcessError`` when a step fails.
    """
    root = cache_dir()
    binary = root / "actions.test"
    if binary.exists() and binary.stat().st_mtime >= GO_FILE.stat().st_mtime:
        return binary
    tree = root / "src"
    if not tree.exists():
        root.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=root) as scratch:
            staged = Path(scratch) / "src"
            _checkout(source or os.environ.get("KAI_GIT") or KAI_GITHUB, staged)
            staged.rename(tree)
    shutil.copy(GO_FILE, tree / PACKAGE / GO_FILE.name)
    if log:
        print(f"building KAI {KAI_TAG}'s action benchmarks in {tree} ...", flush=True)
    subprocess.run(
        ["go", "test", "-c", "-o", str(binary), f"./{PACKAGE}/"],
        cwd=tree,
        check=True,
        capture_output=not log,
    )
    return binary


def run(binary: Path, case: GoCase, timeout_s: float) -> GoResult | str:
    """One timed run of ``case`` (``-test.benchtime 1x``), or why there is no result."""
    tree = cache_dir() / "src" / PACKAGE
    env = {**os.environ, "PODMUSTER_KAI_CASES": case.spec()}
    try:
        done = subprocess.run(
            [
                str(binary),
                "-test.run",
                "^$",
                "-test.bench",
                "PodmusterSizes",
                "-test.benchtime",
                "1x",
            ],
            cwd=tree,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
    except subprocess.TimeoutExpired:
        return f"> {timeout_s:.0f} s (stopped)"
    for line in done.stdout.splitlines():
        match = _LINE.match(line)
        if match and match["name"] == case.name:
            metrics = {unit: float(value) for value, unit in _METRIC.findall(match["metrics"])}
            return GoResult(
                metrics["ns/op"] / 1e9,
                metrics["cpu-ns/op"] / 1e9,
                int(metrics["binds"]),
                int(metrics["evicted"]),
                int(metrics["pipelined"]),
            )
    tail = (done.stdout + done.stderr).strip().splitlines()[-3:]
    return "failed: " + " | ".join(tail)
