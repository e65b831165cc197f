"""Scheduling signatures (docs/semantics.md §5.2): which job a failed one lets the action skip.

Why: skipping a job that could start starves it (KAI's first-differing-task
rule does, every cycle); trying one that cannot only costs time. Each row is
worked out by hand from the rule: skip only when the new job has as many tasks
or more and each failed task can be paired with a new task that asks as much
or more of every resource. Requests are (GPU, CPU) pairs.
"""

from __future__ import annotations

import numpy as np
import pytest

from scheduler.actions.signatures import FailedJobs
from scheduler.api.pods import PodInfo, PodStatus
from scheduler.api.resources import GPU_UNIT

KEY = ("q", "same constraints")


def _tasks(*requests: tuple[int, int]) -> list[PodInfo]:
    return [
        PodInfo(
            namespace="default",
            name=f"t{i}",
            uid=f"t{i}",
            creation=0.0,
            request=np.array([cpu, 0, 1, gpu * GPU_UNIT], dtype=np.int64),
            status=PodStatus.PENDING,
        )
        for i, (gpu, cpu) in enumerate(requests)
    ]


ROWS = [
    # failed,            new,                 skip   rule (KAI's verdict)
    ([(4, 1)], [(4, 1)], True),  # equal: as hard (KAI: skip)
    ([(4, 1)], [(8, 1)], True),  # more GPU per task (KAI: skip)
    ([(4, 1)], [(4, 1), (4, 1)], True),  # one more equal task (KAI: skip)
    ([(4, 1)], [(2, 1)], False),  # smaller (KAI: try)
    ([(4, 1)], [(2, 1), (2, 1)], False),  # no task asks 4 (KAI: try, first task 2 < 4)
    ([(1, 1), (4, 1)], [(2, 1), (2, 1)], False),  # no task asks 4 (KAI: skip, 2 > 1 first)
    ([(4, 1)], [(2, 8)], False),  # less GPU, more CPU: not harder (KAI: skip)
    ([(4, 1), (1, 1)], [(4, 1), (4, 1)], True),  # 4 >= 4 and 4 >= 1 (KAI: skip)
    ([(2, 1), (2, 1)], [(8, 1)], False),  # fewer tasks (KAI: try)
]


@pytest.mark.parametrize(("failed", "new", "skip"), ROWS)
def test_skip_only_a_job_at_least_as_hard(
    failed: list[tuple[int, int]], new: list[tuple[int, int]], skip: bool
) -> None:
    jobs = FailedJobs()
    jobs.record(KEY, _tasks(*failed), "preempt: no victim would make room")
    reason = jobs.skip_reason(KEY, _tasks(*new))
    assert (reason == "preempt: no victim would make room") is skip
    assert jobs.skip_reason(("other queue", "same constraints"), _tasks(*new)) is None


def test_the_smallest_failed_job_is_kept() -> None:
    """KAI's representative: replaced by a failed job no larger than it, kept otherwise."""
    jobs = FailedJobs()
    jobs.record(KEY, _tasks((4, 1)), "first")
    jobs.record(KEY, _tasks((8, 1)), "larger")  # larger: the 4-GPU job stays
    assert jobs.skip_reason(KEY, _tasks((4, 1))) == "first"
    jobs.record(KEY, _tasks((2, 1)), "smaller")  # smaller: it becomes the representative
    assert jobs.skip_reason(KEY, _tasks((2, 1))) == "smaller"
    jobs.record(KEY, _tasks((1, 8)), "incomparable")  # neither: the 2-GPU job stays
    assert jobs.skip_reason(KEY, _tasks((2, 1))) == "smaller"
