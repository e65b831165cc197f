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


def _config(plugins: Any = None, **keys: Any) -> dict[str, Any]:
    config = dict(keys)
    if plugins is not None:
        config["plugins"] = plugins
    return {"scheduler": {"config": config}}


def _usage(**params: Any) -> dict[str, Any]:
    return {"scheduler": {"usage": {"source": "builtin", "params": params}}}


# Values the schema and the scheduler's own loader (scheduler/config.py) must judge
# alike: accepted by both, or refused by both. Values files keep types, so a string
# stays a string (as `--set` makes of 0.5).
SAME_VERDICT: list[tuple[str, dict[str, Any]]] = [
    ("numa on", _config({"numa": {"enabled": True}})),
    ("numa off with an ignore list",
     _config({"numa": {"enabled": False, "arguments": {"ignoreList": "hugepages-2Mi"}}})),
    ("numa ignore list not text", _config({"numa": {"arguments": {"ignoreList": ["a"]}}})),
    ("KAI plugin enabled", _config({"predicates": {"enabled": True}, "gpupack": {}})),
    ("KAI plugin disabled", _config({"predicates": {"enabled": False}})),
    ("KAI plugin priority", _config({"priority": {"priority": 3}})),
    ("KAI plugin arguments", _config({"topology": {"arguments": {"x": "1"}}})),
    ("unknown plugin", _config({"numaa": {"enabled": True}})),
    ("KAI's multiplier spelling", _config({"proportion": {"arguments": {
        "relcaimerSaturationMultiplier": "1.5"}}})),
    ("KAI's spelling below 1", _config({"proportion": {"arguments": {
        "relcaimerSaturationMultiplier": "0.9"}}})),
    ("multiplier string below 1", _config({"proportion": {"arguments": {
        "reclaimerSaturationMultiplier": "0.5"}}})),
    ("multiplier number below 1", _config({"proportion": {"arguments": {
        "reclaimerSaturationMultiplier": 0.5}}})),
    ("multiplier string", _config({"proportion": {"arguments": {
        "reclaimerSaturationMultiplier": " 2.5 "}}})),
    ("multiplier string 1", _config({"proportion": {"arguments": {
        "reclaimerSaturationMultiplier": "1"}}})),
    ("multiplier with exponent", _config({"proportion": {"arguments": {
        "reclaimerSaturationMultiplier": "1.5e1"}}})),
    ("kValue string 0", _config({"proportion": {"arguments": {"kValue": "0"}}})),
    ("kValue string .5", _config({"proportion": {"arguments": {"kValue": ".5"}}})),
    ("kValue string negative", _config({"proportion": {"arguments": {"kValue": "-0.5"}}})),
    ("kValue string inf", _config({"proportion": {"arguments": {"kValue": "inf"}}})),
    ("stuck threshold 0s", _config(stuckInReleasingThreshold="0s")),
    ("stuck threshold 0m0s", _config(stuckInReleasingThreshold="0m0s")),
    ("stuck threshold 0", _config(stuckInReleasingThreshold="0")),
    ("stuck threshold 500ms", _config(stuckInReleasingThreshold="500ms")),
    ("stuck threshold 0.5s", _config(stuckInReleasingThreshold="0.5s")),
    ("stuck threshold 1m0s", _config(stuckInReleasingThreshold="1m0s")),
    ("stuck threshold 0s30ms", _config(stuckInReleasingThreshold="0s30ms")),
    ("action search 0s", _config(maxActionSearchDuration="0s")),
    ("job search 10s", _config(maxJobSearchDuration="10s")),
    ("min runtime 0", _config(minRuntime={"preemptMinRuntime": "0"})),
    ("min runtime 90s", _config(minRuntime={"reclaimMinRuntime": "90s"})),
    ("min runtime negative", _config(minRuntime={"reclaimMinRuntime": "-1s"})),
    ("staleness grace in microseconds", _config(defaultStalenessGracePeriod="1500us")),
    ("cron", _usage(windowType="cron", cronString="0 0 * * 1")),
    ("cron lists ranges steps names", _usage(
        windowType="cron", cronString="*/15 0-23/2 1,15 JAN-mar mon-fri")),
    ("cron shorthand", _usage(windowType="cron", cronString="@Weekly")),
    ("cron minute 61", _usage(windowType="cron", cronString="61 * * * *")),
    ("cron four fields", _usage(windowType="cron", cronString="0 0 * *")),
    ("cron day 0", _usage(windowType="cron", cronString="0 0 0 * *")),
    ("cron weekday 8", _usage(windowType="cron", cronString="0 0 * * 8")),
    ("cron step 0", _usage(windowType="cron", cronString="*/0 * * * *")),
    ("cron unknown shorthand", _usage(windowType="cron", cronString="@often")),
    ("usage window 0w", _usage(windowSize="0w")),
    ("usage window 2d12h", _usage(windowSize="2d12h")),
    ("usage window fraction", _usage(windowSize="1.5d")),
    ("fetch interval 0s", _usage(fetchInterval="0s")),
    ("fetch interval in days", _usage(fetchInterval="1d")),
    ("staleness 10m", _usage(stalenessPeriod="10m")),
    ("half life negative", _usage(halfLifePeriod="-1h")),
    ("query timeout 0s", _usage(extraParams={"usageQueryTimeout": "0s"})),
]  # fmt: skip


def scheduler_accepts(helm: Helm, values: dict[str, Any]) -> str:
    """ "" when the scheduler's loader takes the configuration the chart renders for
    ``values`` (schema check skipped), else its error."""
    import yaml

    from scheduler.config import ConfigError, load_config

    out = helm._run_with_values(
        ["template", "podmuster", str(CHART), "--skip-schema-validation",
         "--show-only", "templates/scheduler-config.yaml"], values,
    )  # fmt: skip
    configmap = yaml.safe_load(out)
    try:
        load_config(yaml.safe_load(configmap["data"]["scheduler.yaml"]))
    except ConfigError as exc:
        return str(exc)
    return ""


@pytest.mark.parametrize("values", [v for _, v in SAME_VERDICT], ids=[i for i, _ in SAME_VERDICT])
def test_schema_judges_the_scheduler_configuration_as_the_scheduler_does(
    helm: Helm, values: dict[str, Any]
) -> None:
    """What the scheduler refuses at start fails the install; what it takes (such as
    plugins.numa, documented in docs/configuration.md) installs."""
    refused = scheduler_accepts(helm, values)
    if refused:
        with pytest.raises(HelmError) as failure:
            helm.template(values)
        assert "values don't meet the specifications of the schema" in failure.value.stderr
    else:
        helm.template(values)


def test_schema_knows_every_plugin_the_scheduler_knows() -> None:
    from scheduler.config import _PLUGIN_ARGUMENTS

    schema = json.loads((CHART / "values.schema.json").read_text())
    plugins = schema["definitions"]["schedulerConfig"]["properties"]["plugins"]["properties"]
    assert set(plugins) == set(_PLUGIN_ARGUMENTS)
    for name, arguments in _PLUGIN_ARGUMENTS.items():
        assert set(plugins[name]["properties"]["arguments"]["properties"]) == set(arguments), name
