"""What the engine reports for rounds: the last-start stamp (§5.2) and evicted groups (§2).

Why it matters for rounds: minimum runtime protects a victim from its last
start on; without the stamp, a job started in round 1 of ``--rounds`` (or in
the simulator) would never be protected in round 2. And a round's output
lists the victims' pod groups with outcome ``evicted``, so a reader of
``--rounds`` sees who lost their pods, not only who gained.
"""

from __future__ import annotations

from scheduler.config import SchedulerConfig
from tests.kits.worlds import NOW, job, node, queue, run_objects

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


def test_victim_groups_are_reported_evicted() -> None:
    """docs/cli.md §2: a pod group whose pods the cycle evicts has outcome ``evicted``."""
    result = run_objects(
        [
            node("node0", gpus=2),
            queue("default", gpu_quota=-1),
            queue("q", "default", gpu_quota=2, gpu_weight=1),
            job("low", "q", 2, gpus=1, states=["Running"] * 2, nodes=["node0"] * 2),
            job("high", "q", 1, gpus=2, priority_class="inference"),
        ],
        SchedulerConfig(),
    )
    outcomes = {o.pod_group: (o.outcome, o.reasons) for o in result.pod_groups}
    assert outcomes == {"default/high": ("pipelined", ()), "default/low": ("evicted", ())}
