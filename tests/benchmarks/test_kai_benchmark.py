"""KAI's benchmark topologies at small sizes: podmuster decides what KAI decides on them.

Why: ``make bench-kai`` runs by hand at up to 1,000 nodes, so nothing else would
notice a change that made podmuster decide differently from KAI on KAI's own
benchmarks. Here every case runs at its KAI size, and ReclaimLargeJobs and
consolidation at 10, 20 and 50 nodes, through the benchmark's own ``measure``.
Only the documented difference (consolidation alone, docs/semantics.md §5.2)
may differ, and it must differ in the documented way: nothing moves.
Timings are not checked.
"""

from __future__ import annotations

import pytest

from benchmarks import kai, kai_go
from scheduler.config import SchedulerConfig

CASES = kai.cases(large_nodes=[20], divisor=2) + kai.cases(large_nodes=[20], divisor=10)[-3:]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_kai_case_decisions(case: kai.Case) -> None:
    row = kai.measure(case, repeat=1, config=SchedulerConfig())
    counts = [row["binds"], row["evictions"], row["pipelined"]]
    if case.documented_difference:
        assert counts == [0, 0, 0]
    else:
        assert row["verdict"] == "same", (counts, row["expected"])


def test_topology_shapes() -> None:
    """The facts taken from KAI's benchmark file, counted on the generated objects."""
    mixed = kai.topo.mixed(10, 50)
    kinds = [o["kind"] for o in mixed.objects]
    assert kinds.count("Node") == 10
    assert kinds.count("PodGroup") == 50
    assert len(mixed.pending_jobs) == 25
    queues = {
        o["metadata"]["name"]: o["spec"].get("parentQueue")
        for o in mixed.objects
        if o["kind"] == "Queue"
    }
    assert queues == {
        "dept-a": None,
        "dept-b": None,
        "queue-0": "dept-a",
        "queue-1": "dept-a",
        "queue-2": "dept-b",
        "queue-3": "dept-b",
    }
    large = kai.topo.large_job(10)
    pods = [o for o in large.objects if o["kind"] == "Pod"]
    assert sum(1 for p in pods if p["spec"].get("nodeName")) == 80
    assert sum(1 for p in pods if not p["spec"].get("nodeName")) == 5


def test_go_output_line_parsed() -> None:
    """KAI's Go run reports ns/op, its CPU time and the decision counts as metrics."""
    line = (
        "BenchmarkPodmusterSizes/Allocate_1000Node-2   \t       1\t112712707028 ns/op"
        "\t      5000 binds\t 9.1e+10 cpu-ns/op\t         0 evicted\t         0 pipelined"
    )
    match = kai_go._LINE.match(line)
    assert match is not None
    assert match["name"] == "Allocate_1000Node"
    metrics = {unit: float(v) for v, unit in kai_go._METRIC.findall(match["metrics"])}
    assert metrics == {
        "ns/op": 112712707028.0,
        "binds": 5000.0,
        "cpu-ns/op": 9.1e10,
        "evicted": 0.0,
        "pipelined": 0.0,
    }


def test_every_go_case_names_a_known_action_and_topology() -> None:
    """The Go file understands exactly these (benchmarks/kai_go/podmuster_sizes_test.go)."""
    go_file = kai_go.GO_FILE.read_text()
    for case in kai.cases(large_nodes=[1000], divisor=2):
        if case.go is not None:
            assert f'case "{case.go.action}"' in go_file
            assert f'case "{case.go.kind}"' in go_file
            assert case.go.name == case.name
