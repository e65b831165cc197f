"""Node pools in the chart: one scheduler Deployment per pool (KAI's scheduling shards).

Each pool's scheduler gets `--node-pool`, the chart's node-pool label, its own
ServiceAccount with the scheduler's rules and a Role on its own Lease (the name the
scheduler computes, scheduler.cache.pools), and its config merged over the scheduler's.
The default pool's scheduler can be turned off; pools with mode all, and pool names
that are not label values or that give two pools one object name, are refused.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from chartkit import NAMESPACE, Helm, HelmError, Rendered, container

from podmuster.cli import build_parser
from scheduler.cache.pools import NodePool
from scheduler.config import load_config

pytestmark = pytest.mark.chart

POOLS = {
    "scheduler": {
        "nodePools": [
            {"name": "a100"},
            {
                "name": "Infer_ence",
                "replicas": 2,
                "config": {"placementStrategy": {"gpu": "spread", "cpu": "spread"}},
            },
        ]
    },
    "podgrouper": {"nodepoolLabelKey": "example.com/pool"},
}


def _deployment(rendered: Rendered, name: str) -> dict[str, Any]:
    return rendered.get("Deployment", name)


def _config(rendered: Rendered, deployment: dict[str, Any]) -> Any:
    """The scheduler configuration a Deployment mounts, loaded as the scheduler loads it."""
    volumes = deployment["spec"]["template"]["spec"]["volumes"]
    name = next(v["configMap"]["name"] for v in volumes if v["name"] == "config")
    raw = yaml.safe_load(rendered.get("ConfigMap", name)["data"]["scheduler.yaml"])
    return load_config(raw), raw


def test_one_scheduler_per_pool_beside_the_default(helm: Helm) -> None:
    rendered = helm.template(POOLS)
    schedulers = [n for n in rendered.names("Deployment") if "scheduler" in n]
    assert schedulers == [
        "podmuster-scheduler",
        "podmuster-scheduler-a100",
        "podmuster-scheduler-infer-ence",
    ]
    for name, pool, replicas in (
        ("podmuster-scheduler", None, 1),
        ("podmuster-scheduler-a100", "a100", 1),
        ("podmuster-scheduler-infer-ence", "Infer_ence", 2),
    ):
        deployment = _deployment(rendered, name)
        assert deployment["spec"]["replicas"] == replicas
        spec = deployment["spec"]["template"]["spec"]
        assert spec["serviceAccountName"] == name
        parsed = build_parser().parse_args(container(deployment)["args"])
        assert parsed.component == "scheduler"
        assert parsed.node_pool == pool
        assert parsed.node_pool_label == "example.com/pool"
        assert parsed.leader_elect
        lease = NodePool(pool, parsed.node_pool_label).lease_name
        role = rendered.get("Role", f"{name}-leader-election")
        assert role["rules"][-1]["resourceNames"] == [lease]
        binding = rendered.get("ClusterRoleBinding", name)
        assert binding["subjects"][0] == {
            "kind": "ServiceAccount",
            "name": name,
            "namespace": NAMESPACE,
        }
        assert (
            rendered.get("ClusterRole", name)["rules"]
            == rendered.get("ClusterRole", "podmuster-scheduler")["rules"]
        )


def test_a_pools_config_is_merged_over_the_schedulers(helm: Helm) -> None:
    rendered = helm.template(POOLS)
    default, default_raw = _config(rendered, _deployment(rendered, "podmuster-scheduler"))
    shared, _ = _config(rendered, _deployment(rendered, "podmuster-scheduler-a100"))
    own, own_raw = _config(rendered, _deployment(rendered, "podmuster-scheduler-infer-ence"))
    assert shared == default
    assert own_raw["placementStrategy"] == {"gpu": "spread", "cpu": "spread"}
    assert own_raw["actions"] == default_raw["actions"]
    assert own != default
    pod = _deployment(rendered, "podmuster-scheduler-infer-ence")["spec"]["template"]
    assert (
        pod["metadata"]["annotations"]["checksum/config"]
        != _deployment(rendered, "podmuster-scheduler")["spec"]["template"]["metadata"][
            "annotations"
        ]["checksum/config"]
    )


def test_the_default_pools_scheduler_can_be_left_out(helm: Helm) -> None:
    values = {"scheduler": {"nodePools": [{"name": "a"}, {"name": "b"}], "defaultPool": False}}
    rendered = helm.template(values)
    schedulers = [n for n in rendered.names("Deployment") if "scheduler" in n]
    assert schedulers == ["podmuster-scheduler-a", "podmuster-scheduler-b"]
    assert "podmuster-scheduler" not in rendered.names("ServiceAccount")


@pytest.mark.parametrize(
    ("values", "words"),
    [
        ({"mode": "all", "scheduler": {"nodePools": [{"name": "a"}]}}, "needs mode: components"),
        (
            {"scheduler": {"nodePools": [{"name": "a.b"}, {"name": "A_b"}]}},
            "have the same object name scheduler-a-b",
        ),
        ({"scheduler": {"nodePools": [{"name": "has space"}]}}, "nodePools"),
        ({"scheduler": {"nodePools": [{"name": "-lead"}]}}, "nodePools"),
        ({"scheduler": {"nodePools": [{"nam": "typo"}]}}, "nodePools"),
        ({"scheduler": {"nodePools": ["bare-string"]}}, "nodePools"),
        (
            {"scheduler": {"nodePools": [{"name": "a", "config": {"actions": ["dance"]}}]}},
            "nodePools",
        ),
    ],
    ids=[
        "mode-all",
        "same-slug",
        "space",
        "leading-dash",
        "unknown-key",
        "not-a-map",
        "bad-config",
    ],
)
def test_bad_pools_are_refused(helm: Helm, values: dict[str, Any], words: str) -> None:
    with pytest.raises(HelmError) as failure:
        helm.template(values)
    assert words in failure.value.stderr
