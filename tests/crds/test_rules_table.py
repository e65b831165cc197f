"""One answer per contract rule: the same inputs through every component that applies it.

Each rule of :mod:`crds.rules` is applied by several components; each table below feeds
its rows to each component through that component's own entry point (the admission
webhook's validation, the scheduler's snapshot, the binder's decision, the status
controllers, the node-scale-adjuster, the simulator) and expects the rule's answer from
all of them. A component that computes the rule its own way again fails here.
"""

from __future__ import annotations

from typing import Any

import pytest

from crds import rules
from crds.gpusharing import FRACTION, MEMORY, NUM_DEVICES
from scheduler.api.resources import GPU_UNIT
from scheduler.binder.decide import decide
from scheduler.cache.reading import read_bind_request
from scheduler.cache.snapshotting import build_snapshot
from scheduler.controllers.podgroup_status import GpuMemory, is_non_preemptible, pod_request
from scheduler.controllers.reconciler import StatusControllers
from scheduler.scale_adjuster.deciding import DeviceError, Settings, devices_of, scaling_pod
from simulator.workloads import pod_gpus
from tests.kits import worlds as t
from webhooks.pods import validate_pod

# --- fraction validity ----------------------------------------------------------------------

FRACTIONS = [
    ("0.5", True),
    ("0.25", True),
    ("0.999", True),
    ("0.0004", True),  # charged as 0.001 (rules.fraction_units), never refused after admission
    ("0.9996", True),  # charged as 0.999
    ("1e-4", True),
    (" 0.5", False),  # KAI's ParseFloat takes no spaces
    ("0.5\n", False),
    ("1", False),
    ("1.0", False),
    ("0", False),
    ("-0.25", False),
    ("1.5", False),
    ("half", False),
    ("nan", False),
    ("0x1", False),
]


def sharing_pod(annotations: dict[str, str], name: str = "p") -> dict[str, Any]:
    (body,) = t.pod(name, "g", gpus=0, annotations=annotations)
    return body


def webhook_accepts(pod: dict[str, Any]) -> bool:
    return not validate_pod(pod, t.DEFAULT_SCHEDULER_NAME)


def engine_accepts(pod: dict[str, Any]) -> bool:
    objects = t.flatten([t.queue("q"), t.pod_group("g", "q"), pod])
    return not build_snapshot(t.sourced(objects), strict=False).errors


def scale_adjuster_accepts(pod: dict[str, Any]) -> bool:
    try:
        devices_of(pod, 0.1)
    except DeviceError:
        return False
    return True


def status_controller_counts_it(pod: dict[str, Any]) -> bool:
    return "nvidia.com/gpu" in pod_request(pod)


def simulator_counts_it(pod: dict[str, Any]) -> bool:
    return pod_gpus(pod) > 0


FRACTION_COMPONENTS = {
    "webhook": webhook_accepts,
    "engine": engine_accepts,
    "scale adjuster": scale_adjuster_accepts,
    "status controller": status_controller_counts_it,
    "simulator": simulator_counts_it,
}


@pytest.mark.parametrize(("raw", "valid"), FRACTIONS)
def test_every_component_agrees_on_gpu_fraction_validity(raw: str, valid: bool) -> None:
    pod = sharing_pod({FRACTION: raw})
    answers = {name: accepts(pod) for name, accepts in FRACTION_COMPONENTS.items()}
    assert answers == dict.fromkeys(FRACTION_COMPONENTS, valid)
    try:
        rules.gpu_fraction(raw)
        assert valid
    except rules.RuleError:
        assert not valid


# --- integer annotations: ASCII digits only, as KAI's ParseUint -------------------------------

INTEGERS = [
    ("2", True),
    ("0100", True),
    ("0", False),
    ("-2", False),
    ("+2", False),
    (" 2", False),
    ("2\n", False),
    ("\u00b2", False),  # superscript two: str.isdigit() is true, int() refuses it
    ("\u0661\u0660\u0660", False),  # Arabic-Indic 100: str.isdigit() is true, int() reads it
    ("2.0", False),
    ("1_0", False),
    (str(2**64), False),
]


@pytest.mark.parametrize(("raw", "valid"), INTEGERS)
def test_every_component_agrees_on_num_devices_validity(raw: str, valid: bool) -> None:
    pod = sharing_pod({FRACTION: "0.25", NUM_DEVICES: raw})
    answers = {name: accepts(pod) for name, accepts in FRACTION_COMPONENTS.items()}
    assert answers == dict.fromkeys(FRACTION_COMPONENTS, valid)


@pytest.mark.parametrize(("raw", "valid"), INTEGERS)
def test_every_component_agrees_on_gpu_memory_validity(raw: str, valid: bool) -> None:
    pod = sharing_pod({MEMORY: raw})
    answers = {"webhook": webhook_accepts(pod), "engine": engine_accepts(pod)}
    assert answers == dict.fromkeys(answers, valid)
    if valid:
        assert rules.gpu_memory(raw) == int(raw)
    else:
        with pytest.raises(rules.RuleError, match=r"^metadata\.annotations\[gpu-memory\]: "):
            rules.gpu_memory(raw)


# --- a shared GPU next to whole GPUs -----------------------------------------------------------

WHOLE_ROWS = [
    ({}, True),
    ({"cpu": "1"}, True),
    ({"nvidia.com/gpu": "1"}, False),
    ({"nvidia.com/gpu": "0"}, False),  # KAI refuses the key, whatever the amount
    ({"amd.com/gpu": "1"}, False),
]


@pytest.mark.parametrize(("limits", "valid"), WHOLE_ROWS)
@pytest.mark.parametrize("annotations", [{FRACTION: "0.5"}, {MEMORY: "1000"}])
def test_webhook_and_engine_agree_on_shared_with_whole_gpus(
    limits: dict[str, str], valid: bool, annotations: dict[str, str]
) -> None:
    pod = sharing_pod(annotations)
    pod["spec"]["containers"][0]["resources"] = {"limits": limits}
    objects = t.flatten([t.queue("q"), t.pod_group("g", "q"), pod])
    engine = [
        str(e).removeprefix("scenario: ")
        for e in build_snapshot(t.sourced(objects), strict=False).errors
    ]
    webhook = [str(p) for p in validate_pod(pod, t.DEFAULT_SCHEDULER_NAME)]
    assert engine == webhook
    assert not webhook if valid else len(webhook) == 1
    for name in limits if not valid else ():
        assert f"resources.limits[{name}]: {name} limit" in webhook[0]
        assert f"with the {next(iter(annotations))} annotation" in webhook[0]


# --- GPUs of a pod ----------------------------------------------------------------------------

GPU_ROWS = [
    ({}, 2.0, 2.0),
    ({FRACTION: "0.5"}, 0, 0.5),
    ({FRACTION: "0.25", NUM_DEVICES: "3"}, 0, 0.75),
    ({FRACTION: "0.3333", NUM_DEVICES: "3"}, 0, 0.999),  # thousandths, as charged
    ({FRACTION: "0.0004"}, 0, 0.001),
    ({FRACTION: "0.9996", NUM_DEVICES: "2"}, 0, 1.998),
]


@pytest.mark.parametrize(("annotations", "whole", "gpus"), GPU_ROWS)
def test_every_component_counts_the_same_gpus(
    annotations: dict[str, str], whole: float, gpus: float
) -> None:
    (pod,) = t.pod("p", "g", gpus=whole, annotations=annotations)
    objects = t.flatten([t.queue("q"), t.pod_group("g", "q"), pod])
    (engine_pod,) = build_snapshot(t.sourced(objects)).snapshot.pods
    answers = {
        "engine": engine_pod.quota[0] / GPU_UNIT,
        "status controller": float(pod_request(pod).get("nvidia.com/gpu", 0)),
        "simulator": pod_gpus(pod),
    }
    assert answers == pytest.approx(dict.fromkeys(answers, gpus))


# --- a pod's request ---------------------------------------------------------------------------


def request_pod() -> dict[str, Any]:
    (pod,) = t.pod("p", "g", cpu="1", memory="1G", overhead={"cpu": "100m"})
    pod["spec"]["initContainers"] = [
        {"name": "side", "restartPolicy": "Always", "resources": {"requests": {"cpu": "2"}}},
        {"name": "setup", "resources": {"requests": {"cpu": "2500m", "memory": "3G"}}},
        {"name": "late-side", "restartPolicy": "Always", "resources": {"limits": {"cpu": "1"}}},
    ]
    return pod


def test_every_component_computes_the_same_pod_request() -> None:
    # containers 1 + sidecars 2 + 1 = 4 cpu; "setup" beside the first sidecar: 4.5 cpu, 3G;
    # the pod needs the larger of each, plus the overhead: 4.6 cpu, 3G memory
    pod = request_pod()
    objects = t.flatten([t.queue("q"), t.pod_group("g", "q"), pod])
    snapshot = build_snapshot(t.sourced(objects)).snapshot
    (engine_pod,) = snapshot.pods
    names = list(snapshot.space.names)
    engine = (int(engine_pod.request[names.index("cpu")]), int(engine_pod.request[1]))
    status = pod_request(pod)
    scaled = scaling_pod(pod, 1, Settings())
    scaled_requests = scaled["spec"]["containers"][0]["resources"]["requests"]
    answers = {
        "engine": engine,
        "status controller": (int(status["cpu"]), int(status["memory"] * 10**6)),
        "scale adjuster": (int(scaled_requests["cpu"][:-1]), int(scaled_requests["memory"])),
    }
    assert answers == dict.fromkeys(answers, (4600, 3 * 10**9))


# --- a BindRequest that has finally failed ---------------------------------------------------

BIND_ROWS = [
    # (phase, failedAttempts, backoffLimit, finally failed)
    ("Failed", 1, None, True),  # KAI: no limit, one attempt
    ("Failed", 0, None, True),  # KAI's binder does not count the attempt without a limit
    ("Failed", 1, 3, False),
    ("Failed", 3, 3, True),
    ("Failed", 0, 0, True),
    ("Pending", 0, None, False),
    (None, 5, 0, False),
]


def bind_request(phase: str | None, attempts: int, limit: int | None) -> dict[str, Any]:
    body = t.bind_request("p", "n1")
    if limit is not None:
        body["spec"]["backoffLimit"] = limit
    body["status"] = {"failedAttempts": attempts, **({"phase": phase} if phase else {})}
    return body


@pytest.mark.parametrize(("phase", "attempts", "limit", "failed"), BIND_ROWS)
def test_scheduler_and_binder_agree_when_a_bind_request_has_failed(
    phase: str | None, attempts: int, limit: int | None, failed: bool
) -> None:
    body = bind_request(phase, attempts, limit)
    (unbound,) = t.pod("p", "g")
    answers = {
        "scheduler": read_bind_request(body) is None,
        "binder": decide(body, unbound, now=1000.0).kind == "done",
        "rule": rules.bind_request_finally_failed(body["spec"], body["status"]),
    }
    assert answers == dict.fromkeys(answers, failed)


# --- priority defaults ---------------------------------------------------------------------------

PRIORITY_ROWS = [
    # (class of the PodGroup, globalDefault class value or None, priority, preemptible)
    ("train", None, 50, True),
    ("build", None, 100, False),
    ("unknown", None, 50, True),
    ("", None, 50, True),
    ("unknown", 120, 120, False),
    ("train", 120, 50, True),
]


def priority_class(name: str, value: int, global_default: bool = False) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        "globalDefault": global_default,
    }


@pytest.mark.parametrize(("name", "global_default", "priority", "preemptible"), PRIORITY_ROWS)
def test_scheduler_and_status_controller_agree_on_priority(
    name: str, global_default: int | None, priority: int, preemptible: bool
) -> None:
    classes = [priority_class("train", 50), priority_class("build", 100)]
    if global_default is not None:
        classes.append(priority_class("everyone", global_default, global_default=True))
    group = t.pod_group("g", "q", priority_class=name or None)
    objects = t.flatten([t.queue("q"), group, t.pod("p", "g"), *classes])
    (job,) = build_snapshot(t.sourced(objects)).snapshot.jobs.values()
    controller = StatusControllers(api=None)  # type: ignore[arg-type]  # no API call is made
    for pc in classes:
        controller.priority_classes.objects[("", pc["metadata"]["name"])] = pc
    controller_priority = controller.priority_of(name)
    answers = {
        "scheduler": (job.priority, job.preemptible),
        "status controller": (
            controller_priority,
            not is_non_preemptible(group, controller_priority),
        ),
    }
    assert answers == dict.fromkeys(answers, (priority, preemptible))


# --- a node's GPU memory ---------------------------------------------------------------------

NODE_MEMORY = [
    ("40000", (40000, True)),
    ("40050", (40000, True)),
    ("1048575", (1048500, True)),  # the largest value read as MiB
    (str(16 * 1024**3), (16300, True)),  # bytes (gpu-feature-discovery issue 26): 16384 MiB
    (str(80 * 10**9), (76200, True)),  # 80 GB in bytes: 76293 MiB
    ("1048576", (rules.UNSYNCED_GPU_MEMORY, False)),  # 1 MiB in bytes: below 100
    ("99", (rules.UNSYNCED_GPU_MEMORY, False)),
    (" 40000", (rules.UNSYNCED_GPU_MEMORY, False)),
    ("\u00b2", (rules.UNSYNCED_GPU_MEMORY, False)),
]


@pytest.mark.parametrize(("raw", "expected"), NODE_MEMORY)
def test_engine_and_status_controller_read_the_same_gpu_memory(
    raw: str, expected: tuple[int, bool]
) -> None:
    labels = {"nvidia.com/gpu.memory": raw}
    assert rules.node_gpu_memory(labels) == expected
    node = t.node("n", gpus=1, labels=labels)
    objects = t.flatten([t.queue("q"), node])
    shared = build_snapshot(t.sourced(objects)).snapshot.nodes.shared
    assert (int(shared.memory[0]), bool(shared.synced[0])) == expected
    assert GpuMemory([node]).of("n") == expected[0]
