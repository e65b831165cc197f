"""``podmuster simulate`` with a KAI Topology: a gang that must fit one rack waits for one.

Why: the scheduler places a PodGroup with ``kai.scheduler/topology-required-placement``
inside one domain of the named Topology, but the simulator once had no way to be given
a Topology (the cluster YAML's ``objects:`` refused the kind), so a topology-aware
cluster could not be simulated at all. Fixture (``fixtures/topology``): two racks of two
4-GPU nodes; a blocker holds one node of each rack (10 and 20 minutes); at 30 s a 2 x
4-GPU gang arrives that must run inside one rack. Two free nodes exist at once, one in
each rack, so without the Topology rule it would start at 31 s; with it, it starts when
the first blocker ends (600 s) and its rack is whole: at 602 s (decisions take a period
to take effect, and the gang's pods are bound one period after the blocker's removal
is seen).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from podmuster.cli import main

TOPOLOGY = Path(__file__).parent / "fixtures" / "topology"


def _gang(capsys: pytest.CaptureFixture[str], cluster: Path, workloads: Path) -> dict[str, Any]:
    code = main(
        ["simulate", "--cluster", str(cluster), "--workloads", str(workloads), "-o", "json"]
    )
    document = json.loads(capsys.readouterr().out)
    assert code == 0
    (gang,) = [r for r in document["job_results"] if r["workload"] == "PyTorchJob ml/allreduce"]
    return dict(gang)


def _cluster_with_racks(tmp_path: Path) -> Path:
    cluster = tmp_path / "cluster.yaml"
    racks = (TOPOLOGY / "racks.yaml").read_text()
    indented = "".join(f"    {line}\n" for line in racks.splitlines()).replace("    ", "  - ", 1)
    cluster.write_text((TOPOLOGY / "cluster.yaml").read_text() + "objects:\n" + indented)
    return cluster


def test_a_topology_in_the_cluster_yaml_keeps_the_gang_in_one_rack(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gang = _gang(capsys, _cluster_with_racks(tmp_path), TOPOLOGY / "workloads")
    assert (gang["start_s"], gang["wait_s"], gang["nodes"]) == (602.0, 572.0, 2)


def test_a_topology_beside_the_workloads_joins_the_cluster(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workloads = tmp_path / "workloads"
    shutil.copytree(TOPOLOGY / "workloads", workloads)
    shutil.copy(TOPOLOGY / "racks.yaml", workloads / "racks.yaml")
    gang = _gang(capsys, TOPOLOGY / "cluster.yaml", workloads)
    assert (gang["start_s"], gang["wait_s"]) == (602.0, 572.0)


def test_without_the_topology_the_gang_waits_for_it_and_says_so(
    capsys: pytest.CaptureFixture[str],
) -> None:
    gang = _gang(capsys, TOPOLOGY / "cluster.yaml", TOPOLOGY / "workloads")
    assert gang["start_s"] is None
    assert gang["last_reasons"][0] == "Requested topology racks does not exist"


def test_a_broken_topology_is_one_line_and_the_rest_simulated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = _cluster_with_racks(tmp_path)
    cluster.write_text(cluster.read_text().replace("nodeLabel: rack", "nodeLabel: Not A Label!"))
    code = main(["simulate", "--cluster", str(cluster), "--workloads", str(TOPOLOGY / "workloads")])
    err = capsys.readouterr().err.splitlines()
    assert code == 2
    assert len(err) == 1
    assert err[0].startswith(f"podmuster: {cluster}: Topology racks: spec.levels[0].nodeLabel: ")
