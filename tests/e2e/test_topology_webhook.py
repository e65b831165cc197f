"""The Topology admission webhook on a real API server (docs/topology.md, §8 "Compared").

``podmuster run webhooks`` serves ``/validate-topology``; a ValidatingWebhookConfiguration
shaped as the chart's (CREATE and UPDATE of ``kai.scheduler`` topologies, ``Fail``),
limited to the Topologies carrying this test's label, sends them to it. A Topology whose
aliases collide is refused on create with the webhook's message naming the object and
the field; a good one is created; an update giving it an alias equal to a node label is
refused, and the stored object keeps its aliases.
"""

from __future__ import annotations

import json
import uuid

import pytest

from .admission import local_hook, webhooks_server
from .controlplane import Cluster
from .kube import KubectlError, NotYet, Obj, wait_for
from .objects import kai_topology

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

RUN = uuid.uuid4().hex[:6]
LABEL = "e2e.podmuster.io/topology-webhook"
ZONE, RACK = "topology.kubernetes.io/zone", "podmuster.io/e2e-rack"
COLLIDING = "'z' is the alias of levels[0] too"


def labelled(name: str, aliases: tuple[str, str]) -> Obj:
    topology = kai_topology(name, [ZONE, RACK])
    topology["metadata"]["labels"] = {LABEL: RUN}
    for level, alias in zip(topology["spec"]["levels"], aliases, strict=True):
        level["alias"] = alias
    return topology


def test_bad_levels_are_refused_at_the_door(cluster: Cluster) -> None:
    with webhooks_server(cluster) as port:
        config = f"podmuster-topologies-{RUN}"
        hook = local_hook(
            cluster, port, "/validate-topology", "topologies.validation.podmuster.io",
            {"apiGroups": ["kai.scheduler"], "apiVersions": ["v1alpha1"],
             "resources": ["topologies"], "operations": ["CREATE", "UPDATE"], "scope": "Cluster"},
            objectSelector={"matchLabels": {LABEL: RUN}},
        )  # fmt: skip
        cluster.kubectl.create(
            {
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "ValidatingWebhookConfiguration",
                "metadata": {"name": config},
                "webhooks": [hook],
            }
        )
        good, bad = f"topo-{RUN}", f"topo-bad-{RUN}"
        try:

            def refused() -> str | NotYet:
                try:
                    cluster.kubectl.run(
                        "create", "--dry-run=server", "-f", "-",
                        stdin=json.dumps(labelled(bad, ("z", "z"))),
                    )  # fmt: skip
                except KubectlError as exc:
                    return exc.stderr
                return NotYet("the dry run was accepted: the webhook is not called yet")

            message = wait_for("the API server calling /validate-topology", refused, timeout=60)
            assert f"Topology {bad}: spec.levels[1].alias: {COLLIDING}" in message
            with pytest.raises(KubectlError, match=r"spec\.levels\[1\]\.alias"):
                cluster.kubectl.create(labelled(bad, ("z", "z")))
            cluster.kubectl.create(labelled(good, ("zone", "rack")))
            with pytest.raises(KubectlError, match="an alias must not equal a nodeLabel"):
                cluster.kubectl.run(
                    "patch", "topology.kai.scheduler", good, "--type=json",
                    "-p", json.dumps([{"op": "replace", "path": "/spec/levels/0/alias",
                                       "value": RACK}]),
                )  # fmt: skip
            stored = cluster.kubectl.get("topology.kai.scheduler", good)
            assert [level["alias"] for level in stored["spec"]["levels"]] == ["zone", "rack"]
        finally:
            for name in (good, bad):
                cluster.kubectl.run("delete", "topology.kai.scheduler", name, "--ignore-not-found")
            cluster.kubectl.run("delete", "validatingwebhookconfiguration", config,
                                "--ignore-not-found")  # fmt: skip
