"""Running one of our live components as a subprocess of an e2e test.

Why: the scheduler, the binder and the controllers are all started the same way
(``python -m podmuster.cli run <component>`` on the cluster's kubeconfig, the
working tree on ``PYTHONPATH``, registered with the cluster so its log is kept on
failure, SIGTERM at the end); this is that once.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

from .controlplane import Cluster
from .procs import ManagedProcess

REPO = Path(__file__).resolve().parents[2]


@contextlib.contextmanager
def component(
    cluster: Cluster, name: str, flags: Sequence[str], instance: str = ""
) -> Iterator[ManagedProcess]:
    """``podmuster run <name> --kubeconfig=… <flags>``, running until the block ends.

    ``instance`` tells apart two processes of one component (e.g. the schedulers of two
    node pools): each gets its own name and log, ``podmuster-<name>-<instance>``.
    """
    argv = [sys.executable, "-m", "podmuster.cli", "run", name,
            f"--kubeconfig={cluster.kubeconfig}", *flags]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    label = f"podmuster-{name}-{instance}" if instance else f"podmuster-{name}"
    proc = ManagedProcess(label, argv, cluster.workdir, env=env).start()
    cluster.processes[proc.name] = proc
    try:
        yield proc
    finally:
        proc.stop()
        cluster.processes.pop(proc.name, None)


@functools.cache
def run_all_available() -> bool:
    """Whether this tree has ``podmuster run all`` (every component in one process)."""
    argv = [sys.executable, "-m", "podmuster.cli", "run", "all", "--help"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(argv, capture_output=True, env=env, timeout=60, check=False)
    return done.returncode == 0


COMPONENTS = ("podgrouper", "scheduler", "binder", "controllers")

# The flags each component takes for a fast, quiet test run.
PIPELINE_FLAGS: dict[str, tuple[str, ...]] = {
    "podgrouper": ("--metrics-port=-1", "--log-format=json"),
    "scheduler": ("--schedule-period=0.5", "--metrics-port=-1", "--log-format=json"),
    "binder": ("--metrics-port=-1", "--log-format=json"),
    "controllers": ("--metrics-port=-1", "--log-format=json", "--debounce=0.2"),
    "all": ("--schedule-period=0.5", "--metrics-port=-1", "--log-format=json", "--debounce=0.2"),
}


@contextlib.contextmanager
def pipeline(
    cluster: Cluster, separate: bool = False, skip: Sequence[str] = ()
) -> Iterator[dict[str, ManagedProcess]]:
    """podgrouper, scheduler, binder and status controllers, until the block ends.

    One ``podmuster run all`` process when the tree has it (fewer processes on a
    small machine), else (or with ``separate``) one process per component, leaving
    out the components named in ``skip``. Yields the processes by component name.
    """
    with contextlib.ExitStack() as stack:
        if run_all_available() and not separate and not skip:
            names = ["all"]
        else:
            names = [c for c in COMPONENTS if c not in skip]
        procs = {n: stack.enter_context(component(cluster, n, PIPELINE_FLAGS[n])) for n in names}
        yield procs


def kill(proc: ManagedProcess) -> None:
    """SIGKILL the process group at once (a crash: no cleanup, no Lease release)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
