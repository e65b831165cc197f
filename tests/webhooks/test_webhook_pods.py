"""The GPU-sharing annotation rules for pods, fed bad and good pods directly."""

from __future__ import annotations

from typing import Any

import pytest

from webhooks.pods import validate_pod

POD = "Pod ml/nb"


def pod(
    annotations: dict[str, str] | None = None,
    *,
    gpus: dict[str, Any] | None = None,
    init_gpus: dict[str, Any] | None = None,
    scheduler: str = "kai-scheduler",
    name: str = "nb",
) -> dict[str, Any]:
    """A pod with containers ``main`` and ``sidecar`` and the init container ``setup``;
    ``gpus`` are the resources of ``sidecar``, ``init_gpus`` those of ``setup``."""
    metadata: dict[str, Any] = {"namespace": "ml", "annotations": annotations or {}}
    if name:
        metadata["name"] = name
    else:
        metadata["generateName"] = "nb-"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {
            "schedulerName": scheduler,
            "containers": [
                {"name": "main", "image": "x"},
                {"name": "sidecar", "image": "x", "resources": gpus or {}},
            ],
            "initContainers": [{"name": "setup", "image": "x", "resources": init_gpus or {}}],
        },
    }


def messages(obj: dict[str, Any]) -> list[str]:
    return [str(p) for p in validate_pod(obj, "kai-scheduler")]


FRACTION = "metadata.annotations[gpu-fraction]"
MEMORY = "metadata.annotations[gpu-memory]"
DEVICES = "metadata.annotations[gpu-fraction-num-devices]"
CONTAINER = "metadata.annotations[gpu-fraction-container-name]"
MPS = "metadata.annotations[mps]"
WHOLE = (
    "nvidia.com/gpu {} {!r} cannot be combined with the {} annotation: "
    "ask for shared or whole GPUs, not both"
)

BAD: list[tuple[str, dict[str, Any], list[str]]] = [
    *[
        (
            f"fraction {value!r}",
            pod({"gpu-fraction": value}),
            [
                f"{POD}: {FRACTION}: must be a number with 0 < x < 1 (a whole GPU is asked for "
                f"with nvidia.com/gpu), got {value!r}"
            ],
        )
        for value in (
            *("0", "1", "1.0", "1.5", "-0.5", "half", "", "nan", "inf", "1e9", "0,5", "0x1"),
            *(" 0.5", "0.5\n", " 2.5e-1 "),  # KAI's ParseFloat takes no spaces
        )
    ],
    *[
        (
            f"memory {value!r}",
            pod({"gpu-memory": value}),
            [
                f"{POD}: {MEMORY}: must be a positive integer of MiB (ASCII digits only), "
                f"got {value!r}"
            ],
        )
        for value in (
            *("0", "-1024", "+1024", "8Gi", "1.5", "", "1_000", "lots"),
            *(" 100", "100\n", "\u00b2", "\u0661\u0660\u0660"),  # as KAI's ParseUint
        )
    ],
    (
        "fraction and memory",
        pod({"gpu-fraction": "0.5", "gpu-memory": "4096"}),
        [
            f"{POD}: {MEMORY}: cannot be combined with gpu-fraction: ask for a portion or for "
            "memory, not both"
        ],
    ),
    (
        "fraction with a whole-GPU limit",
        pod({"gpu-fraction": "0.5"}, gpus={"limits": {"nvidia.com/gpu": "1"}}),
        [
            f"{POD}: spec.containers[1].resources.limits[nvidia.com/gpu]: "
            + WHOLE.format("limit", "1", "gpu-fraction")
        ],
    ),
    (
        "fraction with a zero whole-GPU limit (KAI refuses the key)",
        pod({"gpu-fraction": "0.5"}, gpus={"limits": {"nvidia.com/gpu": "0"}}),
        [
            f"{POD}: spec.containers[1].resources.limits[nvidia.com/gpu]: "
            + WHOLE.format("limit", "0", "gpu-fraction")
        ],
    ),
    (
        "fraction with an AMD GPU (the scheduler counts it as a whole GPU)",
        pod({"gpu-fraction": "0.5"}, gpus={"limits": {"amd.com/gpu": "1"}}),
        [
            f"{POD}: spec.containers[1].resources.limits[amd.com/gpu]: "
            + WHOLE.format("limit", "1", "gpu-fraction").replace("nvidia.com/gpu", "amd.com/gpu")
        ],
    ),
    (
        "memory with a whole-GPU request on an init container",
        pod({"gpu-memory": "2048"}, init_gpus={"requests": {"nvidia.com/gpu": 2}}),
        [
            f"{POD}: spec.initContainers[0].resources.requests[nvidia.com/gpu]: "
            + WHOLE.format("request", 2, "gpu-memory")
        ],
    ),
    (
        "a limit and a request on one container are one problem",
        pod(
            {"gpu-fraction": "0.25"},
            gpus={"limits": {"nvidia.com/gpu": "1"}, "requests": {"nvidia.com/gpu": "1"}},
        ),
        [
            f"{POD}: spec.containers[1].resources.limits[nvidia.com/gpu]: "
            + WHOLE.format("limit", "1", "gpu-fraction")
        ],
    ),
    *[
        (
            f"num-devices {value!r}",
            pod({"gpu-fraction": "0.5", "gpu-fraction-num-devices": value}),
            [f"{POD}: {DEVICES}: must be a positive integer (ASCII digits only), got {value!r}"],
        )
        for value in ("0", "-2", "1.5", "two", "", " 2", "\u00b2", "\u0661")
    ],
    (
        "num-devices alone",
        pod({"gpu-fraction-num-devices": "2"}),
        [f"{POD}: {DEVICES}: applies only together with gpu-fraction or gpu-memory"],
    ),
    (
        "container name of no container",
        pod({"gpu-fraction": "0.5", "gpu-fraction-container-name": "mian"}),
        [
            f"{POD}: {CONTAINER}: no container or init container named 'mian' "
            "(the pod has 'main', 'sidecar', 'setup')"
        ],
    ),
    (
        "mps without a fraction or memory",
        pod({"mps": "true"}),
        [f'{POD}: {MPS}: "true" applies only together with gpu-fraction or gpu-memory'],
    ),
    (
        "mps with whole GPUs",
        pod({"mps": "true"}, gpus={"limits": {"nvidia.com/gpu": "1"}}),
        [f'{POD}: {MPS}: "true" applies only together with gpu-fraction or gpu-memory'],
    ),
    (
        "a pod from a controller is named by its generateName",
        pod({"gpu-fraction": "2"}, name=""),
        [
            "Pod ml/nb-*: " + FRACTION + ": must be a number with 0 < x < 1 (a whole GPU is asked "
            "for with nvidia.com/gpu), got '2'"
        ],
    ),
    (
        "every problem is reported",
        pod(
            {"gpu-fraction": "1.5", "gpu-memory": "x", "gpu-fraction-container-name": "gpu"},
            gpus={"limits": {"nvidia.com/gpu": 1}},
        ),
        [
            f"{POD}: {FRACTION}: must be a number with 0 < x < 1 (a whole GPU is asked for "
            "with nvidia.com/gpu), got '1.5'",
            f"{POD}: {MEMORY}: must be a positive integer of MiB (ASCII digits only), got 'x'",
            f"{POD}: {MEMORY}: cannot be combined with gpu-fraction: ask for a portion or for "
            "memory, not both",
            f"{POD}: spec.containers[1].resources.limits[nvidia.com/gpu]: "
            + WHOLE.format("limit", 1, "gpu-fraction"),
            f"{POD}: {CONTAINER}: no container or init container named 'gpu' "
            "(the pod has 'main', 'sidecar', 'setup')",
        ],
    ),
]


@pytest.mark.parametrize(
    ("obj", "expected"), [(o, e) for _, o, e in BAD], ids=[i for i, _, _ in BAD]
)
def test_bad_annotations_are_refused_naming_pod_and_annotation(
    obj: dict[str, Any], expected: list[str]
) -> None:
    assert messages(obj) == expected


GOOD: list[tuple[str, dict[str, Any]]] = [
    ("no annotations", pod()),
    ("whole GPUs without sharing", pod(gpus={"limits": {"nvidia.com/gpu": "2"}})),
    ("fraction", pod({"gpu-fraction": "0.5"})),
    ("small fraction", pod({"gpu-fraction": "0.01"})),
    ("fraction with an exponent", pod({"gpu-fraction": "2.5e-1"})),
    ("fraction the scheduler charges as 0.001", pod({"gpu-fraction": "0.0004"})),
    ("fraction the scheduler charges as 0.999", pod({"gpu-fraction": "0.9996"})),
    ("memory with leading zeros, as KAI's ParseUint", pod({"gpu-memory": "04096"})),
    ("memory", pod({"gpu-memory": "4096"})),
    ("fraction on two devices", pod({"gpu-fraction": "0.5", "gpu-fraction-num-devices": "2"})),
    ("memory on four devices", pod({"gpu-memory": "1000", "gpu-fraction-num-devices": "4"})),
    ("container name", pod({"gpu-fraction": "0.3", "gpu-fraction-container-name": "sidecar"})),
    (
        "init container name",
        pod({"gpu-memory": "512", "gpu-fraction-container-name": "setup"}),
    ),
    ("other annotations", pod({"example.com/owner": "ml", "gpu": "1.5"})),
    ("mps with a fraction", pod({"gpu-fraction": "0.5", "mps": "true"})),
    ("mps with memory", pod({"gpu-memory": "2000", "mps": "true"})),
    ("mps off alone", pod({"mps": "false"})),
    *[
        (f"mps {value!r}: no MPS, as KAI reads it", pod({"gpu-fraction": "0.5", "mps": value}))
        for value in ("True", "yes", "1", "")
    ],
    ("mps 'True' alone: KAI refuses only 'true'", pod({"mps": "True"})),
    ("another scheduler's pod is not judged", pod({"gpu-fraction": "7"}, scheduler="default")),
]


@pytest.mark.parametrize("obj", [o for _, o in GOOD], ids=[i for i, _ in GOOD])
def test_good_pods_are_accepted(obj: dict[str, Any]) -> None:
    assert messages(obj) == []


def test_the_scheduler_name_is_configured() -> None:
    obj = pod({"gpu-fraction": "7"}, scheduler="batch")
    assert validate_pod(obj, "batch") != []
    assert validate_pod(pod({"gpu-fraction": "7"}), "batch") == []


def test_malformed_pods_do_not_break_the_rules() -> None:
    obj: dict[str, Any] = {
        "kind": "Pod",
        "metadata": {"name": "p", "annotations": {"gpu-fraction": "0.5", "gpu-fraction-container-name": "c"}},
        "spec": {"schedulerName": "kai-scheduler", "containers": "nope", "initContainers": [None]},
    }  # fmt: skip
    assert messages(obj) == [
        "Pod p: metadata.annotations[gpu-fraction-container-name]: no container or init "
        "container named 'c' (the pod has none)"
    ]
