"""The disruption benchmark at a tiny size: its workloads still produce the decisions it checks.

Why: the benchmark runs by hand at 1,000 and 5,000 nodes, so nothing else would
notice if a change to the engine or to the generator made its workloads
meaningless. Here each workload runs at 20-40 nodes through the benchmark's own
``measure`` (which raises ``BenchmarkError`` on a wrong decision), and the
counts are pinned. Timings are not checked.
"""

from __future__ import annotations

import pytest

from benchmarks import disruption


@pytest.mark.parametrize(
    ("workload", "nodes", "pending", "moved_or_evicted"),
    [
        # 3 gangs of 2 x 8 GPUs reclaimed from the two lenders: 6 pods, 48 GPUs
        ("reclaim", 40, 3, 6),
        ("preempt", 20, 3, 6),
        # two nodes emptied per gang, four 1-GPU pods each
        ("consolidation", 20, 3, 24),
    ],
)
def test_workload_decisions(workload: str, nodes: int, pending: int, moved_or_evicted: int) -> None:
    row = disruption.measure(workload, nodes, repeat=1, pending=pending)
    assert row["preemptors_placed"] == pending
    assert row["preemptor_pods_pipelined"] == pending * disruption.GANG_PODS
    assert row["evicted_pods"] == moved_or_evicted
    if workload != "consolidation":
        assert row["victim_jobs"] == pending
        assert row["gpus_freed"] == pending * disruption.GANG_GPUS


def test_a_wrong_decision_fails_loudly() -> None:
    workload = disruption.preempt_workload(20, 2)
    cache = disruption.build(workload)
    pods = disruption.pod_facts(cache.snapshot().snapshot)
    _, decisions = disruption.action_cycle(cache, workload)
    victim = next(iter(decisions.evicted))
    del decisions.evicted[victim]  # one pod of a victim gang kept: a gang evicted in part
    with pytest.raises(disruption.BenchmarkError, match="in part"):
        disruption.check(workload, pods, decisions)


def test_main_prints_a_row_per_workload(capsys: pytest.CaptureFixture[str]) -> None:
    assert disruption.main(["--nodes", "20", "--repeat", "1", "--pending", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert (
        sum(1 for line in lines if line.split()[:2] in (["reclaim", "20"], ["preempt", "20"])) == 2
    )
    assert any(line.split()[:2] == ["consolidation", "20"] for line in lines)
