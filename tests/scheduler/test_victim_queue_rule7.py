"""The victim queue applies the whole queue order inverted, rule 7 included (§5.4).

Why: KAI's victim queue (``job_order_by_queue.go``, ``buildNodeOrderFn`` with
``reverseOrder``) negates the full queue order, so when rules 1-6 tie the queue with
the larger allocatable share (-1, unlimited, above every number) gives its victim
first, before the younger-queue tie-break (rule 8) is read.
"""

from __future__ import annotations

from scheduler.actions.victims import reverse_job_order, victim_chunks
from scheduler.api.podgroups import PodGroupInfo
from scheduler.cache.snapshotting import build_snapshot
from scheduler.config import SchedulerConfig
from scheduler.cycle import open_session
from tests.kits.worlds import NOW, job, node, queue, sourced


def test_larger_allocatable_share_gives_first() -> None:
    # qa (GPU quota -1: allocatable share -1) is older than qb (GPU quota 2); each runs one
    # CPU-only pod, so rules 1-6 tie. Rule 7 puts qb first in the queue order, so qa is the
    # first victim queue; rule 8 alone (the younger queue first) would pick qb.
    qa = queue("qa", gpu_quota=-1)
    qa["metadata"]["creationTimestamp"] = "2025-12-31T00:01:00Z"
    qb = queue("qb", gpu_quota=2)
    qb["metadata"]["creationTimestamp"] = "2025-12-31T00:30:00Z"
    objects = [
        node("n0", gpus=4, cpu="8"),
        qa,
        qb,
        *job("a", "qa", states=["Running"], nodes=["n0"]),
        *job("b", "qb", states=["Running"], nodes=["n0"]),
    ]
    snapshot = build_snapshot(sourced(objects), now=NOW.timestamp()).snapshot
    session = open_session(snapshot, SchedulerConfig())
    by_queue: dict[str, list[PodGroupInfo]] = {}
    for victim in session.snapshot.jobs.values():
        by_queue.setdefault(victim.queue, []).append(victim)
    ordered = {name: reverse_job_order(session, jobs) for name, jobs in by_queue.items()}
    taken = [v.queue for v, _ in victim_chunks(session, ordered)]
    assert taken == ["qa", "qb"]
