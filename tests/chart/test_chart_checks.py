"""Combinations of values the schema cannot refuse, refused by the chart's own checks
(templates/checks.yaml) with a message naming the values.

Why: each of these installed "successfully" and then did nothing, or something other
than asked: no scheduler at all (defaultPool false with no pools), settings dropped
without a word (per-component sections in mode all), two active schedulers (no leader
election with two replicas), or a gate no pod ever gets (allQueues without the webhook).
"""

from __future__ import annotations

from typing import Any

import pytest
from chartkit import Helm, HelmError

pytestmark = pytest.mark.chart

REFUSED: list[tuple[str, dict[str, Any], str]] = [
    ("no scheduler at all", {"scheduler": {"defaultPool": False}},
     "scheduler.defaultPool: false with no scheduler.nodePools"),
    ("defaultPool false in mode all", {"mode": "all", "scheduler": {"defaultPool": False}},
     "scheduler.defaultPool: false needs mode: components"),
    ("scheduler API limits in mode all", {"mode": "all", "scheduler": {"kubeApi": {"qps": 200}}},
     "scheduler.kubeApi is not used in mode: all"),
    ("scheduler replicas in mode all", {"mode": "all", "scheduler": {"replicas": 3}},
     "scheduler.replicas is not used in mode: all"),
    ("podgrouper memory in mode all",
     {"mode": "all", "podgrouper": {"resources": {"limits": {"memory": "8Gi"}}}},
     "podgrouper.resources is not used in mode: all"),
    ("binder flags in mode all", {"mode": "all", "binder": {"extraArgs": ["--log-level=debug"]}},
     "binder.extraArgs is not used in mode: all"),
    ("controllers placement in mode all",
     {"mode": "all", "controllers": {"nodeSelector": {"pool": "infra"}}},
     "controllers.nodeSelector is not used in mode: all"),
    ("two schedulers without a Lease",
     {"leaderElection": {"enabled": False}, "scheduler": {"replicas": 2}},
     "scheduler.replicas: 2 replicas need leaderElection.enabled"),
    ("two podgroupers without a Lease",
     {"leaderElection": {"enabled": False}, "podgrouper": {"replicas": 2}},
     "podgrouper.replicas: 2 replicas need leaderElection.enabled"),
    ("a pool's two schedulers without a Lease",
     {"leaderElection": {"enabled": False},
      "scheduler": {"nodePools": [{"name": "a100", "replicas": 2}]}},
     "scheduler.nodePools[a100].replicas: 2 replicas"),
    ("pools inherit the scheduler's replicas",
     {"leaderElection": {"enabled": False}, "scheduler": {
         "defaultPool": False, "replicas": 2, "nodePools": [{"name": "a100"}]}},
     "replicas need leaderElection.enabled"),
    ("two all-in-one replicas without a Lease",
     {"mode": "all", "leaderElection": {"enabled": False}, "all": {"replicas": 2}},
     "all.replicas: 2 replicas need leaderElection.enabled"),
    ("two node-scale-adjusters without a Lease",
     {"leaderElection": {"enabled": False},
      "clusterAutoscaling": {"enabled": True, "replicas": 2}},
     "clusterAutoscaling.replicas: 2 replicas"),
    ("every queue gated with no webhook",
     {"webhooks": {"enabled": False}, "queueAdmission": {"allQueues": True}},
     "queueAdmission.allQueues needs webhooks.enabled"),
    ("every queue gated with no gate webhook",
     {"queueAdmission": {"enabled": False, "allQueues": True}},
     "queueAdmission.allQueues needs webhooks.enabled and queueAdmission.enabled"),
]  # fmt: skip

ACCEPTED: list[tuple[str, dict[str, Any]]] = [
    ("mode all with the defaults", {"mode": "all"}),
    ("mode all with its own section and the shared settings",
     {"mode": "all", "all": {"replicas": 2, "kubeApi": {"qps": 200}},
      "scheduler": {"config": {"actions": ["allocate"]}, "schedulePeriod": 2},
      "binder": {"workers": 4}, "podgrouper": {"namespaces": ["team-*"]}}),
    ("mode all with defaults given again",
     {"mode": "all", "scheduler": {"replicas": 1, "nodeSelector": {}},
      "binder": {"resources": {"limits": {"memory": "512Mi"}}}}),
    ("only node pools", {"scheduler": {"defaultPool": False, "nodePools": [{"name": "a"}]}}),
    ("one replica each without a Lease", {"leaderElection": {"enabled": False}}),
    ("two webhook replicas without a Lease (they take none)",
     {"leaderElection": {"enabled": False}, "webhooks": {"replicas": 2}}),
    ("every queue gated", {"queueAdmission": {"allQueues": True}}),
    ("no webhooks", {"webhooks": {"enabled": False}}),
]  # fmt: skip


@pytest.mark.parametrize(
    ("values", "message"), [(v, m) for _, v, m in REFUSED], ids=[i for i, _, _ in REFUSED]
)
def test_refused_with_a_message_naming_the_values(
    helm: Helm, values: dict[str, Any], message: str
) -> None:
    with pytest.raises(HelmError) as failure:
        helm.template(values)
    assert message in failure.value.stderr


@pytest.mark.parametrize("values", [v for _, v in ACCEPTED], ids=[i for i, _ in ACCEPTED])
def test_accepted(helm: Helm, values: dict[str, Any]) -> None:
    helm.template(values)
