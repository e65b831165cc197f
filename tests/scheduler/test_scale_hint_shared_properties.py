"""Properties of the scale-up hint for gangs of GPU-sharing pods (scheduler/actions/scale_hint.py).

Random clusters: one to four GPU nodes of 1, 2 or 4 GPUs with 16000, 40000 or 80000 MiB
each (``nvidia.com/gpu.memory``), in two pools, some GPUs busy with whole-GPU pods and
some nodes holding a running 0.5 pod; one gang of identical sharing pods: a fraction on
one to three devices, or an amount of GPU memory. After one cycle:

- a pending gang always has a hint (it is pending for lack of room: its queue is unlimited);
- pods that no node's devices can host are exactly the unhostable ones;
- sufficiency: adding the hinted number of nodes of the hinted shape and labels (the GPU
  memory label named when the pods ask for memory) lets the same gang be scheduled;
- minimality: with one node fewer the gang still does not fit.
"""

from __future__ import annotations

from typing import Any

from hypothesis import event, given, settings
from hypothesis import strategies as st

from tests.kits.worlds import job, node, queue, run_objects
from tests.scheduler.test_scale_hint_properties import gang_outcome, hinted_node

POOL = "karpenter.sh/nodepool"
GPU_MEMORY = "nvidia.com/gpu.memory"


@st.composite
def clusters(draw: st.DrawFn) -> dict[str, Any]:
    nodes = []
    for i in range(draw(st.integers(1, 4))):
        gpus = draw(st.sampled_from([1, 2, 4]))
        memory = draw(st.sampled_from(["16000", "40000", "80000"]))
        pool = draw(st.sampled_from(["a", "b"]))
        busy = draw(st.integers(0, gpus))
        half = busy < gpus and draw(st.booleans())
        nodes.append((f"n{i}", gpus, memory, pool, busy, half))
    by_memory = draw(st.booleans())
    return {
        "nodes": nodes,
        "tasks": draw(st.integers(1, 10)),
        "share": (
            {"gpu-memory": draw(st.sampled_from(["10000", "30000", "50000"]))}
            if by_memory
            else {
                "gpu-fraction": draw(st.sampled_from(["0.3", "0.5", "0.6"])),
                "gpu-fraction-num-devices": str(draw(st.integers(1, 3))),
            }
        ),
        "pool": draw(st.sampled_from([None, "a", "b"])),
    }


def objects(case: dict[str, Any], extra: list[tuple[str, dict[str, str], dict[str, str]]]) -> list:  # type: ignore[type-arg]
    out: list[Any] = [queue("q")]
    for name, gpus, memory, pool, busy, half in case["nodes"]:
        labels = {POOL: pool, GPU_MEMORY: memory}
        out.append(node(name, gpus=gpus, cpu="32", memory="256Gi", labels=labels))
        if busy:
            out += job(
                f"busy-{name}", "q", busy, gpus=1, states=["Running"] * busy, nodes=[name] * busy
            )
        if half:
            out += job(
                f"half-{name}",
                "q",
                1,
                annotations={"gpu-fraction": "0.5"},
                labels={"runai-gpu-group": f"G-{name}"},
                states=["Running"],
                nodes=[name],
            )
    out += [hinted_node(*added) for added in extra]
    selector = {POOL: case["pool"]} if case["pool"] else None
    out += job("g", "q", case["tasks"], annotations=case["share"], node_selector=selector)
    return out


def hostable_anywhere(case: dict[str, Any]) -> bool:
    share = case["share"]
    devices = int(share.get("gpu-fraction-num-devices", "1"))
    need = int(share.get("gpu-memory", "0"))
    return any(
        gpus >= devices and int(memory) >= need and case["pool"] in (None, pool)
        for _, gpus, memory, pool, _, _ in case["nodes"]
    )


def with_new_nodes(case: dict[str, Any], hint: Any, count: int) -> Any:
    labels = {GPU_MEMORY: "80000", **hint.labels}  # a fraction fits any memory
    extra = [(f"new-{i}", dict(hint.shape), labels) for i in range(count)]
    return gang_outcome(run_objects(objects(case, extra)))


@settings(deadline=None, max_examples=150)
@given(clusters())
def test_shared_hint_is_sufficient_and_minimal(case: dict[str, Any]) -> None:
    outcome = gang_outcome(run_objects(objects(case, [])))
    hint = outcome.scale_up_hint
    if outcome.outcome != "pending":
        assert hint is None
        return
    assert hint is not None
    assert bool(hint.unhostable) == (not hostable_anywhere(case))
    if hint.unhostable:
        assert hint.nodes == 0
        return
    event(f"nodes={min(hint.nodes, 3)} memory={'gpu-memory' in case['share']}")
    if "gpu-memory" in case["share"]:
        assert GPU_MEMORY in hint.labels
    assert with_new_nodes(case, hint, hint.nodes).outcome == "scheduled"
    if hint.nodes > 1:
        assert with_new_nodes(case, hint, hint.nodes - 1).outcome == "pending"
