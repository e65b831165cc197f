"""External PodGroups (``skip-podgrouper``), a Job's ``batch-min-member``, and the
``preemption-delay`` / ``staleness-grace-period`` annotations every grouper copies.

Covers: offline grouping of a manifest with a user-written PodGroup (pods assigned to
it, nothing written for their Job), a skipped Job whose pods name no PodGroup (a
warning naming the pod and field), a Job gang from ``batch-min-member`` beside them;
the durations read from the owners bottom→top then the pod, written as Go prints
them, invalid and (for the delay) negative values skipped as KAI skips them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from adapter_builders import ctx, group, obj, pod

from integrations.grouping import group_workloads

Fixture = Callable[[str], list[dict[str, Any]]]
DELAY = "kai.scheduler/preemption-delay"
STALE = "kai.scheduler/staleness-grace-period"


def test_skipped_workloads_use_their_own_podgroup(fixture: Fixture) -> None:
    result = group_workloads(fixture("external-podgroup.yaml"))
    assert result.errors == ()
    [ablation] = result.pod_groups  # nothing written for sweep or forgotten
    assert ablation["metadata"]["name"].startswith("pg-ablation-")
    assert ablation["spec"]["minMember"] == 2
    assert ablation["spec"]["preemptionDelay"] == "1m30s"
    by_group: dict[str, int] = {}
    for assignment in result.assignments:
        by_group[assignment.pod_group] = by_group.get(assignment.pod_group, 0) + 1
    assert by_group == {"sweep-gang": 3, ablation["metadata"]["name"]: 2}
    [warning] = result.warnings
    assert warning.object.startswith("Pod team-a/forgotten-")
    assert "metadata.annotations[pod-group-name]" in warning.message
    assert 'Job team-a/forgotten has kai.scheduler/skip-podgrouper: "true"' in warning.message


@pytest.mark.parametrize(
    ("job_annotations", "pod_annotations", "delay", "stale"),
    [
        ({}, {}, None, None),
        ({DELAY: "5m", STALE: "1h"}, {DELAY: "1s"}, "5m0s", "1h0m0s"),  # owner first
        ({}, {DELAY: "250ms", STALE: "-1s"}, "250ms", "-1s"),  # then the pod
        ({DELAY: "soon", STALE: "later"}, {DELAY: "2s", STALE: "3s"}, "2s", "3s"),  # invalid
        ({DELAY: "-5s", STALE: "-5s"}, {}, None, "-5s"),  # a negative delay is invalid
    ],
)
def test_duration_annotations(
    job_annotations: dict[str, str],
    pod_annotations: dict[str, str],
    delay: str | None,
    stale: str | None,
) -> None:
    job = obj("batch/v1", "Job", "j", annotations=job_annotations or None, spec={})
    spec = group(ctx(job, pod("j-x", owner=job, annotations=pod_annotations or None)))
    written = spec.to_manifest()["spec"]
    assert written.get("preemptionDelay") == delay
    assert written.get("stalenessGracePeriod") == stale
