"""Running one of our live components as a subprocess of an e2e test.

Why: the scheduler, the binder and the controllers are all started the same way
(``python -m podmuster.cli run <component>`` on the cluster's kubeconfig, the
working tree on ``PYTHONPATH``, registered with the cluster so its log is kept on
failure, SIGTERM at the end); this is that once.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

from .controlplane import Cluster
from .procs import ManagedProcess

REPO = Path(__file__).resolve().parents[2]


@contextlib.contextmanager
def component(cluster: Cluster, name: str, flags: Sequence[str]) -> Iterator[ManagedProcess]:
    """``podmuster run <name> --kubeconfig=… <flags>``, running until the block ends."""
    argv = [sys.executable, "-m", "podmuster.cli", "run", name,
            f"--kubeconfig={cluster.kubeconfig}", *flags]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = ManagedProcess(f"podmuster-{name}", argv, cluster.workdir, env=env).start()
    cluster.processes[proc.name] = proc
    try:
        yield proc
    finally:
        proc.stop()
        cluster.processes.pop(proc.name, None)
