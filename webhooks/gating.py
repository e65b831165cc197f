"""Which new pods are held behind the queue admission gate: a pure function, no API server.

Why this module exists: Kubernetes lets scheduling gates be added only when a pod is
created, so the mutating webhook is the one place the ``kai.scheduler/queue-admission``
gate can be put on. A gated pod is left alone by every scheduler and by node autoscalers
(cluster-autoscaler, Karpenter) until the podmuster scheduler removes the gate, which it
does once the pod's queue can admit its whole gang (docs/semantics.md §5.11).

A pod of our scheduler (``spec.schedulerName``) gets the gate when

* every queue is under the gate (``--admission-gate-all-queues``), or
* its queue label (``kai.scheduler/queue`` unless configured) names a queue under the
  gate (the queue or an ancestor carries ``kai.scheduler/admission-gate: "true"``), or
* it has no queue label and some queue is under the gate: its queue is known only once
  the podgrouper has made its PodGroup (from the workload's labels), so the scheduler
  decides, and lifts the gate at once when that queue turns out not to be under it.

A pod already bound (``spec.nodeName``) or already carrying the gate is left as it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from crds import rules
from crds.names import ADMISSION_GATE, QUEUE_LABEL

__all__ = ["gate_patch", "gated_queues"]

JsonPatch = list[dict[str, Any]]


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def gated_queues(queues: Mapping[str, Mapping[str, Any]]) -> frozenset[str]:
    """The queues under the gate, from the Queue objects by name.

    A Queue whose annotation is not ``"true"``/``"false"`` counts as not opted in (the
    Queue webhook refuses such a value, and the scheduler reports it).
    """
    parents: dict[str, str | None] = {}
    opted: list[str] = []
    for name, body in queues.items():
        parents[name] = _mapping(body.get("spec")).get("parentQueue") or None
        annotations = _mapping(_mapping(body.get("metadata")).get("annotations"))
        try:
            if rules.admission_gate_opt_in(annotations):
                opted.append(name)
        except rules.RuleError:
            continue
    return rules.admission_gated_queues(parents, opted)


def gate_patch(
    obj: Mapping[str, Any],
    scheduler_name: str,
    gated: frozenset[str],
    *,
    everywhere: bool,
    queue_label: str = QUEUE_LABEL,
) -> JsonPatch:
    """The JSONPatch adding the admission gate to Pod ``obj`` (empty: no gate).

    ``queue_label`` is the pod label naming its queue (the podgrouper's setting).
    """
    spec = _mapping(obj.get("spec"))
    if spec.get("schedulerName") != scheduler_name or spec.get("nodeName"):
        return []
    if rules.pod_admission_gated(spec):
        return []
    if not everywhere:
        labels = _mapping(_mapping(obj.get("metadata")).get("labels"))
        queue = labels.get(queue_label)
        if queue is not None and queue not in gated:
            return []
        if queue is None and not gated:
            return []
    gate = {"name": ADMISSION_GATE}
    if isinstance(spec.get("schedulingGates"), list):
        return [{"op": "add", "path": "/spec/schedulingGates/-", "value": gate}]
    return [{"op": "add", "path": "/spec/schedulingGates", "value": [gate]}]
