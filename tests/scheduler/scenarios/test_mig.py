"""MIG (docs/semantics.md §6): slices as extended resources, strategies per node, X GPUs in quota.

Why: with the ``mixed`` strategy a node offers ``nvidia.com/mig-<X>g.<Y>gb``
slices and nothing else; with ``single`` its slices look like whole GPUs and
only whole-GPU requests belong there; a node without MIG offers no slices.
Each case says which request goes where, and a slice counts X GPUs in quota.
"""

from __future__ import annotations

import pytest
from gpu_kit import GpuCase, check, fraction, gpu_node

from tests.kits.worlds import job, node, queue, run_objects

SLICE = "nvidia.com/mig-1g.5gb"
BIG = "nvidia.com/mig-3g.20gb"


def mixed(name: str, slices: dict[str, str] | None = None) -> dict[str, object]:
    """A MIG node, mixed strategy: seven 1g.5gb slices plus ``slices``."""
    return node(
        name,
        extended={SLICE: "7", **(slices or {})},
        labels={"nvidia.com/mig.strategy": "mixed", "node-role.kubernetes.io/mig-enabled": "true"},
    )


def single(name: str, gpus: int = 7) -> dict[str, object]:
    """A MIG node, single strategy: its slices appear as ``nvidia.com/gpu``."""
    return node(
        name,
        gpus=gpus,
        labels={"nvidia.com/mig.strategy": "single", "node-role.kubernetes.io/mig-enabled": "true"},
    )


def labelled(name: str, enabled: str, strategy: str, *, slices: bool = True) -> dict[str, object]:
    """A node labelled ``mig-enabled=<enabled>`` and ``mig.strategy=<strategy>``: seven
    1g.5gb slices, or (``slices=False``) four GPUs."""
    labels = {"nvidia.com/mig.strategy": strategy, "node-role.kubernetes.io/mig-enabled": enabled}
    if slices:
        return node(name, extended={SLICE: "7"}, labels=labels)
    return node(name, gpus=4, labels=labels)


CASES = [
    # A slice request goes to the mixed node, which offers that slice.
    GpuCase(
        "slice-on-mixed-node",
        [queue("q"), gpu_node("g0", 2), mixed("m0"), job("s", "q", extended={SLICE: "1"})],
        binds={"s-0": "m0"},
    ),
    # No MIG node: the slice request is refused with a MIG reason.
    GpuCase(
        "slice-needs-mig-node",
        [queue("q"), gpu_node("g0", 2), job("s", "q", extended={SLICE: "1"})],
        pending=["s"],
        reasons={"s": ["not MIG-enabled"]},
    ),
    # A node that offers slices without labels counts as MIG-enabled, mixed.
    GpuCase(
        "unlabelled-slices-mean-mixed",
        [queue("q"), node("m0", extended={SLICE: "2"}), job("s", "q", extended={SLICE: "2"})],
        binds={"s-0": "m0"},
    ),
    # A slice the mixed node does not offer (3g.20gb) does not fit there.
    GpuCase(
        "slice-size-must-exist",
        [queue("q"), mixed("m0"), job("s", "q", extended={BIG: "1"})],
        pending=["s"],
        reasons={"s": ["Insufficient " + BIG]},
    ),
    # Single strategy: whole-GPU requests are fine there ...
    GpuCase(
        "whole-gpu-on-single-node",
        [queue("q"), single("s0"), job("w", "q", gpus=2)],
        binds={"w-0": "s0"},
    ),
    # ... fractions are not (the slices cannot be shared) ...
    GpuCase(
        "fraction-refused-on-single-node",
        [queue("q"), single("s0"), job("f", "q", annotations=fraction(0.5))],
        pending=["f"],
        reasons={"f": ["MIG-enabled; fractional GPUs are not offered"]},
    ),
    # ... nor slice requests.
    GpuCase(
        "slice-refused-on-single-node",
        [queue("q"), single("s0"), job("s", "q", extended={SLICE: "1"})],
        pending=["s"],
        reasons={"s": ["MIG single strategy"]},
    ),
    # Mixed strategy: a whole-GPU request is refused even if the node also lists GPUs.
    GpuCase(
        "whole-gpu-refused-on-mixed-node",
        [
            queue("q"),
            node(
                "m0",
                gpus=1,
                extended={SLICE: "7"},
                labels={"nvidia.com/mig.strategy": "mixed"},
            ),
            job("w", "q", gpus=1),
        ],
        pending=["w"],
        reasons={"w": ["MIG mixed strategy"]},
    ),
    # Fractions go to the plain GPU node, never to the MIG node.
    GpuCase(
        "fraction-avoids-mixed-node",
        [queue("q"), mixed("a0"), gpu_node("b0", 1), job("f", "q", annotations=fraction(0.5))],
        binds={"f-0": "b0"},
    ),
    # The MIG label is read as Go's ParseBool (KAI): "True" and "1" enable MIG, so the
    # mixed node takes the slice ...
    *[
        GpuCase(
            f"mig-enabled-{value}",
            [queue("q"), labelled("m0", value, "mixed"), job("s", "q", extended={SLICE: "1"})],
            binds={"s-0": "m0"},
        )
        for value in ("True", "1", "t", "TRUE")
    ],
    # ... and a value ParseBool refuses ("yes") leaves the node without MIG.
    GpuCase(
        "mig-enabled-not-a-bool",
        [queue("q"), labelled("m0", "yes", "mixed"), job("s", "q", extended={SLICE: "1"})],
        pending=["s"],
        reasons={"s": ["not MIG-enabled"]},
    ),
    # A strategy neither single nor mixed ("none") is KAI's none: no restriction, so a
    # fraction and a whole GPU go there.
    GpuCase(
        "strategy-none-restricts-nothing",
        [
            queue("q"),
            labelled("n0", "true", "none", slices=False),
            job("f", "q", annotations=fraction(0.5)),
            job("w", "q", gpus=1),
        ],
        binds={"f-0": "n0", "w-0": "n0"},
    ),
    # Quota: one 3g.20gb slice counts 3 GPUs, over a limit of 2.
    GpuCase(
        "slice-counts-x-gpus",
        [
            queue("q", gpu_limit=2),
            mixed("m0", {BIG: "2"}),
            job("s", "q", extended={BIG: "1"}),
        ],
        pending=["s"],
        reasons={"s": ["OverLimit", "gpu=3"]},
    ),
    # Two 1g slices count 2 GPUs: within a limit of 2.
    GpuCase(
        "two-small-slices-within-limit",
        [queue("q", gpu_limit=2), mixed("m0"), job("s", "q", extended={SLICE: "2"})],
        binds={"s-0": "m0"},
    ),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_mig(case: GpuCase) -> None:
    check(case)


def test_slice_bind_is_a_mig_instance() -> None:
    result = run_objects([queue("q"), mixed("m0"), job("s", "q", extended={SLICE: "1"})])
    (bind,) = result.binds
    assert (bind.resource_type, bind.gpu_groups) == ("MigInstance", ())
