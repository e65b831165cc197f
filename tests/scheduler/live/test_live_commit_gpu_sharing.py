"""The committer's BindRequest for shared GPUs and MIG (docs/semantics.md §2.4, §6).

Why: the binder reads ``selectedGPUGroups`` to create one reservation pod per
group and label the pod; ``receivedResourceType`` and ``receivedGPU`` say what
the pod got. These must come from the engine's decision, not be re-derived.
"""

from __future__ import annotations

from scheduler.cycle import Bind
from scheduler.live.committing import bind_request
from tests.kits import worlds as st


def _pod(annotations: dict[str, str] | None = None) -> dict[str, object]:
    (body,) = st.pod("p", "pg", annotations=annotations)
    return body


def test_fraction_bind_request_carries_groups_and_portion() -> None:
    decision = Bind("default/p", "n0", ("g-1",), 500, "Fraction")
    spec = bind_request(_pod({"gpu-fraction": "0.5"}), "n0", 3, decision)["spec"]
    assert spec["receivedResourceType"] == "Fraction"
    assert spec["receivedGPU"] == {"count": 1, "portion": "0.50"}
    assert spec["selectedGPUGroups"] == ["g-1"]


def test_multi_device_gpu_memory_bind_request() -> None:
    decision = Bind("default/p", "n0", ("g-1", "g-2"), 250, "Fraction")
    spec = bind_request(_pod({"gpu-memory": "10000"}), "n0", 3, decision)["spec"]
    assert spec["receivedGPU"] == {"count": 2, "portion": "0.25"}
    assert spec["selectedGPUGroups"] == ["g-1", "g-2"]


def test_regular_and_mig_bind_requests_have_no_groups() -> None:
    regular = bind_request(_pod(), "n0", 3, Bind("default/p", "n0"))["spec"]
    assert regular["receivedResourceType"] == "Regular"
    assert regular["receivedGPU"] == {"count": 0, "portion": "0.00"}
    assert "selectedGPUGroups" not in regular
    mig = bind_request(_pod(), "n0", 3, Bind("default/p", "n0", resource_type="MigInstance"))
    assert mig["spec"]["receivedResourceType"] == "MigInstance"


def test_without_a_decision_the_fraction_is_read_by_the_one_rule() -> None:
    """No engine decision: the annotations, read as crds.rules reads them; a bad one
    (``"²"`` devices: ``int()`` raised ValueError here) is a regular request, not a crash."""
    spec = bind_request(_pod({"gpu-fraction": "0.25", "gpu-fraction-num-devices": "2"}), "n0", 3)
    assert spec["spec"]["receivedResourceType"] == "Fraction"
    assert spec["spec"]["receivedGPU"] == {"count": 2, "portion": "0.25"}
    bad = _pod({"gpu-fraction": "0.25", "gpu-fraction-num-devices": "\u00b2"})
    assert bind_request(bad, "n0", 3)["spec"]["receivedResourceType"] == "Regular"
