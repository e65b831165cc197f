"""Properties of queue admission (docs/semantics.md §5.11) on random queues and gangs:
a gang's gated pods are lifted all together or not at all, and what runs plus what is
admitted never passes a queue's limit, at the leaf or at its parent."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as hs

from tests.kits.worlds import ALLOCATE_ONLY, Item, job, node, queue, run_objects

gangs = hs.lists(
    hs.tuples(hs.sampled_from(["a", "b"]), hs.integers(1, 3), hs.integers(1, 3)),
    min_size=1,
    max_size=5,
)


@settings(max_examples=60, deadline=None)
@given(
    leaf_limit=hs.integers(0, 6),
    parent_limit=hs.integers(0, 8),
    running=hs.integers(0, 3),
    waiting=gangs,
)
def test_whole_gangs_within_every_limit(
    leaf_limit: int, parent_limit: int, running: int, waiting: list[tuple[str, int, int]]
) -> None:
    objects: list[Item] = [
        queue("top", cpu_limit=parent_limit * 1000, admission_gate=True),
        queue("a", "top", cpu_limit=leaf_limit * 1000),
        queue("b", "top"),
        node("n0", cpu="64"),
    ]
    if running:
        states = ["Running"] * running
        objects.append(job("run", "a", running, cpu="1", states=states, nodes=["n0"] * running))
    sizes: dict[str, tuple[str, int, int]] = {}
    for i, (leaf, pods, cpu) in enumerate(waiting):
        name = f"g{i}"
        sizes[f"default/{name}"] = (leaf, pods, cpu)
        objects.append(job(name, leaf, pods, cpu=str(cpu), states=["AdmissionGated"] * pods))
    result = run_objects(objects, ALLOCATE_ONLY)
    lifted: dict[str, int] = {}
    for pod in result.ungated:
        group = pod.rsplit("-", 1)[0]
        lifted[group] = lifted.get(group, 0) + 1
    used = {"a": running, "b": 0}
    for group, count in lifted.items():
        leaf, pods, cpu = sizes[group]
        assert count == pods, f"{group}: {count} of {pods} pods lifted"
        used[leaf] += pods * cpu
    assert used["a"] <= max(leaf_limit, running)
    assert used["a"] + used["b"] <= max(parent_limit, running)
