"""The live scheduler's built-in usage record, kept in a file, divides fair shares with it.

``podmuster run scheduler --config FILE`` with ``usageDBConfig.clientType: builtin`` and a
``historyFile`` that already holds an hour in which ``heavy`` held every GPU of the
cluster (as a previous run of the scheduler would have written it). Each queue waits with
one 64-GPU pod. From its first cycle the scheduler reads heavy's usage as about 1 and
light's as 0, so with kValue 1
heavy's over-quota weight is ``max(0, 2w - u) = 0`` for any normalised weight w <= 1/2
and light's is positive: ``kai_queue_fair_share_gpu`` shows heavy at 0, light above 0.
When the scheduler stops, it writes its own samples back to the file.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import QueueFactory
from .controlplane import Cluster
from .fairshare import heavy_and_light_fair_shares
from .kube import NotYet, wait_for
from .live import component
from .procs import free_port

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

PREFIX = f"b{uuid.uuid4().hex[:5]}"
HEAVY, LIGHT = f"{PREFIX}-heavy", f"{PREFIX}-light"


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("usage") / "usage.json"
    start = time.time() - 3600.0
    path.write_text(
        json.dumps(
            {
                "version": 1,
                "samples": [
                    {
                        "at": start,
                        "capacity": [8.0, 32000.0, 137438953472.0],
                        "allocation": {HEAVY: [8.0, 0.0, 0.0], LIGHT: [0.0, 0.0, 0.0]},
                    }
                ],
            }
        )
    )
    return path


@pytest.fixture(scope="module")
def scheduler(cluster: Cluster, history: Path) -> Iterator[int]:
    config = history.parent / "config.yaml"
    config.write_text(
        "usageDBConfig:\n"
        "  clientType: builtin\n"
        f"  historyFile: {history}\n"
        "  usageParams: {windowSize: 2h, fetchInterval: 1s}\n"
    )
    port = free_port()
    flags = [f"--config={config}", f"--metrics-port={port}", "--schedule-period=0.5",
             "--log-format=json"]  # fmt: skip
    with component(cluster, "scheduler", flags) as proc:
        yield port
        proc.check_alive()


def test_the_builtin_record_lowers_the_heavy_queues_fair_share(
    cluster: Cluster, scheduler: int, history: Path, namespace: str, kai_queues: QueueFactory
) -> None:
    with heavy_and_light_fair_shares(cluster, namespace, kai_queues, PREFIX, scheduler) as seen:
        assert seen[HEAVY] == 0, seen
        assert seen[LIGHT] > 0

        def rewritten() -> bool | NotYet:
            samples = json.loads(history.read_text())["samples"]
            if len(samples) < 2:
                return NotYet(f"{len(samples)} sample(s) in the file")
            return True

        # written at most once per fetchInterval (1s) while it cycles
        wait_for("the scheduler's samples in the history file", rewritten, timeout=60)
