"""Queue usage at session open, summed as the plain rule says, float for float.

Why: ``proportion.plugin._queue_usage`` is a pass over every pod of the cluster at
each session open, written for speed (rows made up front, pods added in job and
pod order); its sums must be exactly those of the plain rule: each leaf's
allocated preemptible, allocated non-preemptible and pending pods' quotas, added
in the same order, then the leaves added up the tree.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings

from scheduler.api.pods import COUNTS_TO_QUEUE, PodStatus
from scheduler.api.snapshot import ClusterSnapshot
from scheduler.cache.snapshotting import build_snapshot
from scheduler.plugins.proportion.plugin import _queue_usage
from tests.kits.histories import small_worlds
from tests.kits.worlds import sourced


def _plain(snapshot: ClusterSnapshot) -> list[dict[str, list[float]]]:
    tree = snapshot.queues
    own: dict[tuple[int, str], list[float]] = {}
    for job in snapshot.jobs.values():
        if job.queue not in tree.queues or job.key in snapshot.job_problems:
            continue
        for pod in job.iter_pods():
            if pod.status in COUNTS_TO_QUEUE:
                kind = 0 if job.preemptible else 1
            elif pod.status == PodStatus.PENDING:
                kind = 2
            else:
                continue
            row = own.setdefault((kind, job.queue), [0.0, 0.0, 0.0])
            for r in range(3):
                row[r] += pod.quota[r]
    totals: list[dict[str, Any]] = [{n: np.zeros(3) for n in tree.queues} for _ in range(3)]
    for name in tree.queues:
        rows = [np.array(own.get((kind, name), [0.0, 0.0, 0.0])) for kind in range(3)]
        for ancestor in tree.path_to_root(name):
            totals[0][ancestor] += rows[0] + rows[1]
            totals[1][ancestor] += rows[1]
            totals[2][ancestor] += rows[0] + rows[1] + rows[2]
    return [{n: v.tolist() for n, v in t.items()} for t in totals]


@settings(deadline=None, max_examples=60)
@given(small_worlds(gpus=True))
def test_queue_usage_equals_the_plain_sums(objects: list[Any]) -> None:
    snapshot = build_snapshot(sourced(objects)).snapshot
    usage = _queue_usage(snapshot)
    assert [{n: v.tolist() for n, v in part.items()} for part in usage] == _plain(snapshot)
