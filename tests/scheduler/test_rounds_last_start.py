"""The engine stamps ``kai.scheduler/last-start-timestamp`` on a job that starts (§5.2).

Why it matters for rounds: minimum runtime protects a victim from its last
start on; without the stamp, a job started in round 1 of ``--rounds`` (or in
the simulator) would never be protected in round 2.
"""

from __future__ import annotations

from scheduler.testing import NOW, job, node, queue, run_objects

LAST_START = "kai.scheduler/last-start-timestamp"


def test_a_job_that_starts_is_stamped_with_its_last_start() -> None:
    result = run_objects(
        [
            node("node0", gpus=4),
            queue("default", gpu_quota=-1),
            queue("q", "default", gpu_quota=4),
            job("fresh", "q", 2, gpus=1),
            job(
                "elastic",
                "q",
                2,
                gpus=1,
                states=["Running", "Pending"],
                nodes=["node0", None],
                min_member=1,
            ),
        ]
    )
    assert {b.pod for b in result.binds} == {
        "default/fresh-0",
        "default/fresh-1",
        "default/elastic-1",
    }
    assert result.annotations == {
        "default/fresh": {LAST_START: NOW.strftime("%Y-%m-%dT%H:%M:%SZ")}
    }  # elastic had started
