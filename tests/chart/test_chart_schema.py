"""values.schema.json rejects bad values before anything reaches the cluster.

Why: a mistyped key (``schedulername``) or a value the components would refuse at start
(an unknown action, a placement strategy that does not exist) should fail ``helm
install`` with the key named, not produce pods that crash-loop.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from chartkit import CHART, Helm, HelmError

pytestmark = pytest.mark.chart

BAD_VALUES: list[tuple[str, dict[str, Any], str]] = [
    ("unknown top-level key", {"schedulername": "x"}, "schedulername"),
    ("unknown mode", {"mode": "some"}, "mode"),
    ("empty scheduler name", {"schedulerName": ""}, "schedulerName"),
    ("queue label with spaces", {"queueLabelKey": "my queue"}, "queueLabelKey"),
    ("metrics port out of range", {"metricsPort": 70000}, "metricsPort"),
    ("log format", {"logFormat": "xml"}, "logFormat"),
    ("unknown action", {"scheduler": {"config": {"actions": ["allocate", "steal"]}}}, "actions"),
    ("no actions", {"scheduler": {"config": {"actions": []}}}, "actions"),
    (
        "placement strategy",
        {"scheduler": {"config": {"placementStrategy": {"gpu": "tight"}}}},
        "gpu",
    ),
    (
        "negative kValue",
        {"scheduler": {"config": {"plugins": {"proportion": {"arguments": {"kValue": -1}}}}}},
        "kValue",
    ),
    (
        "kValue that is no number",
        {"scheduler": {"config": {"plugins": {"proportion": {"arguments": {"kValue": "lots"}}}}}},
        "kValue",
    ),
    (
        "duration",
        {"scheduler": {"config": {"defaultStalenessGracePeriod": "soon"}}},
        "defaultStalenessGracePeriod",
    ),
    (
        "zero stuck-in-releasing threshold",
        {"scheduler": {"config": {"stuckInReleasingThreshold": 0}}},
        "stuckInReleasingThreshold",
    ),
    (
        "negative stuck-in-releasing threshold",
        {"scheduler": {"config": {"stuckInReleasingThreshold": "-2m"}}},
        "stuckInReleasingThreshold",
    ),
    ("unknown config key", {"scheduler": {"config": {"schedulerName": "x"}}}, "schedulerName"),
    ("zero schedule period", {"scheduler": {"schedulePeriod": 0}}, "schedulePeriod"),
    ("negative replicas", {"binder": {"replicas": -1}}, "replicas"),
    ("zero binder workers", {"binder": {"workers": 0}}, "workers"),
    ("replicas as a string", {"controllers": {"replicas": "2"}}, "replicas"),
    (
        "wildcard owner rule",
        {"podgrouper": {"extraOwnerRules": [{"apiGroups": ["*"], "resources": ["things"]}]}},
        "apiGroups",
    ),
    (
        "owner rule with verbs",
        {
            "podgrouper": {
                "extraOwnerRules": [{"apiGroups": ["a"], "resources": ["b"], "verbs": ["delete"]}]
            }
        },
        "verbs",
    ),
    (
        # null removes a default in helm: the queue would have no GPU limit (a cap of zero).
        "queue resource with its limit removed",
        {"defaultQueues": {"child": {"name": "q", "resources": {"gpu": {"limit": None}}}}},
        "limit",
    ),
    (
        "queue quota below -1",
        {
            "defaultQueues": {
                "parent": {
                    "name": "p",
                    "resources": {"gpu": {"quota": -5, "limit": -1, "overQuotaWeight": 1}},
                }
            }
        },
        "quota",
    ),
    ("queue name with capitals", {"defaultQueues": {"parent": {"name": "Research"}}}, "name"),
    (
        "priority value as text",
        {"priorityClasses": {"items": [{"name": "x", "value": "high"}]}},
        "value",
    ),
    ("image pull policy", {"image": {"pullPolicy": "Sometimes"}}, "pullPolicy"),
    ("PDB percentage", {"podDisruptionBudget": {"maxUnavailable": "lots"}}, "maxUnavailable"),
    ("pod webhook failure policy", {"webhooks": {"failurePolicy": {"pods": "Maybe"}}}, "pods"),
    (
        "pod webhook selector operator",
        {
            "webhooks": {
                "pods": {
                    "namespaceSelector": {"matchExpressions": [{"key": "a", "operator": "Is"}]}
                }
            }
        },
        "operator",
    ),
    ("pod webhook unknown key", {"webhooks": {"pods": {"selector": {}}}}, "selector"),
    # per-component placement and extras
    ("component key misspelt", {"scheduler": {"nodeselector": {}}}, "nodeselector"),
    ("node pool key misspelt", {"scheduler": {"nodePools": [{"name": "a", "toleration": []}]}},
     "toleration"),
    ("extra argument not a flag", {"binder": {"extraArgs": ["debug"]}}, "extraArgs"),
    ("extra env without a name", {"binder": {"extraEnv": [{"value": "x"}]}}, "name"),
    ("toleration operator", {"tolerations": [{"key": "a", "operator": "Is"}]}, "operator"),
    ("affinity key", {"dashboard": {"affinity": {"nodeAffinty": {}}}}, "nodeAffinty"),
    ("zero component QPS", {"scheduler": {"kubeApi": {"qps": 0}}}, "qps"),
    ("anti-affinity mode", {"replicaAntiAffinity": {"mode": "strict"}}, "mode"),
    ("health port", {"healthPort": 0}, "healthPort"),
    ("direct bind as text", {"scheduler": {"directBind": "yes"}}, "directBind"),
    # time-based fair share
    ("usage source", {"scheduler": {"usage": {"source": "influx"}}}, "source"),
    ("prometheus URL without scheme",
     {"scheduler": {"usage": {"source": "prometheus", "prometheus": {"url": "prom:9090"}}}},
     "url"),
    ("tumbling window without its start",
     {"scheduler": {"usage": {"source": "builtin", "params": {"windowType": "tumbling"}}}},
     "tumblingWindowStartTime"),
    ("cron window without its expression",
     {"scheduler": {"usage": {"source": "builtin", "params": {"windowType": "cron"}}}},
     "cronString"),
    ("usage parameter misspelt",
     {"scheduler": {"usage": {"source": "builtin", "params": {"window": "1w"}}}}, "window"),
    ("usage window size", {"scheduler": {"usage": {"params": {"windowSize": "a week"}}}},
     "windowSize"),
    # hooks, dashboard, monitoring
    ("hook image without a tag", {"hooks": {"image": {"tag": ""}}}, "tag"),
    ("crd upgrade flag as text", {"crdUpgrade": {"enabled": "no"}}, "enabled"),
    ("grafana label not text", {"grafanaDashboard": {"labels": {"grafana_dashboard": 1}}},
     "grafana_dashboard"),
    ("service monitor timeout", {"metrics": {"serviceMonitor": {"scrapeTimeout": "soon"}}},
     "scrapeTimeout"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("values", "key"), [(v, k) for _, v, k in BAD_VALUES], ids=[i for i, _, _ in BAD_VALUES]
)
def test_bad_values_are_rejected_naming_the_key(
    helm: Helm, values: dict[str, Any], key: str
) -> None:
    with pytest.raises(HelmError) as failure:
        helm.template(values)
    assert "values don't meet the specifications of the schema" in failure.value.stderr
    assert key in failure.value.stderr


def test_lint_rejects_bad_values_too(helm: Helm) -> None:
    with pytest.raises(HelmError):
        helm.lint({"mode": "some"})


@pytest.mark.parametrize("grace", ["-1s", "0s", -1, 0])
def test_staleness_grace_may_be_zero_or_negative(helm: Helm, grace: object) -> None:
    """Zero evicts a stale gang at once, negative never (docs/configuration.md)."""
    helm.template({"scheduler": {"config": {"defaultStalenessGracePeriod": grace}}})


def test_good_alternatives_are_accepted(helm: Helm) -> None:
    helm.template(
        {
            "scheduler": {
                "config": {
                    "defaultStalenessGracePeriod": "1h30m",
                    "maxConsolidationPreemptees": -1,
                    # KAI writes plugin arguments as strings
                    "plugins": {"proportion": {"arguments": {"kValue": "1.5"}}},
                }
            },
            "podDisruptionBudget": {"maxUnavailable": "50%"},
            "podgrouper": {
                "extraOwnerRules": [{"apiGroups": [""], "resources": ["replicationcontrollers"]}]
            },
        }
    )


def test_every_default_value_is_described_by_the_schema() -> None:
    """The schema is closed (additionalProperties false) wherever values.yaml has keys."""
    import yaml

    schema = json.loads((CHART / "values.schema.json").read_text())
    values = yaml.safe_load((CHART / "values.yaml").read_text())

    def walk(node: dict[str, Any], data: Any, path: str) -> None:
        if "$ref" in node:
            node = schema["definitions"][node["$ref"].rsplit("/", 1)[1]]
        if not isinstance(data, dict) or "properties" not in node:
            return
        assert node.get("additionalProperties") is False, path
        for key, value in data.items():
            assert key in node["properties"], f"{path}.{key}"
            walk(node["properties"][key], value, f"{path}.{key}")

    walk(schema, values, "values")
