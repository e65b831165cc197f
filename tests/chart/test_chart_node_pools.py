"""Node pools in the chart: one scheduler Deployment per pool (KAI's scheduling shards).

Each pool's scheduler gets `--node-pool`, the chart's node-pool label, its own
ServiceAccount with the scheduler's rules and a Role on its own Lease (the name the
scheduler computes, scheduler.cache.pools), and its config merged over the scheduler's.
The default pool's scheduler can be turned off; pools with mode all, and pool names
that are not label values or that give two pools one object name, are refused. On the
real API server, each pool's scheduler runs as its own account and takes its Lease.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest
import yaml
from chartkit import NAMESPACE, Helm, HelmError, Rendered, container, token_kubeconfig
from test_chart_apply import apply_rendered, delete_rendered, release_name, reservations_in

from podmuster.cli import build_parser
from scheduler.cache.pools import NodePool
from scheduler.config import load_config
from tests.e2e import live
from tests.e2e.controlplane import Cluster
from tests.e2e.kube import NotYet, wait_for

pytestmark = pytest.mark.chart

POOL_CONFIG = {"placementStrategy": {"gpu": "spread", "cpu": "spread"}}
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


@pytest.mark.e2e
@pytest.mark.timeout(300)
def test_pool_schedulers_take_their_leases_as_their_accounts(
    helm: Helm, cluster: Cluster, namespace: str, tmp_path: Path
) -> None:
    """Applied on the real API server (Deployments dry-run), each pool's scheduler runs
    with its rendered arguments and configuration, as its own ServiceAccount, and holds
    its Lease: the RBAC covers every pool, and a pool name with capitals and '_' still
    makes a Lease name the API server accepts."""
    release = release_name()
    values = {
        "scheduler": {"nodePools": [{"name": "a"}, {"name": "GPU_b", "config": POOL_CONFIG}]},
        "webhooks": {"enabled": False},
        **reservations_in(namespace),
    }
    rendered = helm.template(values, release=release, namespace=namespace)
    pools = {}
    for deployment in rendered.of_kind("Deployment"):
        parsed = build_parser().parse_args(container(deployment)["args"])
        if getattr(parsed, "node_pool", None):
            pools[parsed.node_pool] = (deployment, parsed.node_pool_label)
    assert sorted(pools) == ["GPU_b", "a"]
    try:
        apply_rendered(cluster, rendered)
        with contextlib.ExitStack() as stack:
            procs = []
            for pool, (deployment, _) in pools.items():
                account = deployment["spec"]["template"]["spec"]["serviceAccountName"]
                kubeconfig = token_kubeconfig(cluster, namespace, account, tmp_path / f"{pool}.kc")
                config = tmp_path / f"{pool}.yaml"
                _, raw = _config(rendered, deployment)
                config.write_text(yaml.safe_dump(raw))
                local = {"--config": str(config), "--metrics-port": "0"}
                args = container(deployment)["args"]
                kept = [a for a in args[2:] if a.split("=", 1)[0] not in local]
                flags = [*kept, *(f"{k}={v}" for k, v in local.items())]
                flags.append(f"--kubeconfig={kubeconfig}")  # the last one wins
                procs.append(stack.enter_context(live.component(cluster, "scheduler", flags, pool)))

            def holders() -> dict[str, str] | NotYet:
                held = {}
                for pool, (_, label) in pools.items():
                    lease = NodePool(pool, label).lease_name
                    if not cluster.kubectl.exists("lease", lease, "-n", namespace):
                        return NotYet(f"no Lease {lease}")
                    spec = cluster.kubectl.get("lease", lease, "-n", namespace)["spec"]
                    if not spec.get("holderIdentity"):
                        return NotYet(f"Lease {lease} is not held")
                    held[lease] = spec["holderIdentity"]
                return held

            assert len(wait_for("a Lease held per pool", holders, timeout=120)) == 2
            for proc in procs:
                proc.check_alive()
                log = proc.log_path.read_text(errors="replace")
                denied = [line for line in log.splitlines() if "forbidden" in line.lower()]
                assert denied == [], f"{proc.name} was refused:\n" + "\n".join(denied[:10])
    finally:
        delete_rendered(cluster, rendered)
