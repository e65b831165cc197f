"""The offline commands on mutated manifests (docs/cli.md "Bad input"), by hypothesis.

Valid manifests of every kind users feed ``podmuster group``, ``schedule`` and
``simulate`` (tests/fuzz/fixtures) get one mutation each (tests/fuzz/fuzz_mutations.py):
a field deleted, a wrong type, a bad quantity, a huge or negative number, a 10,000-character
string, an object given twice, a kind or apiVersion in the wrong case. Whatever the
mutation, the command must keep the contract:

- the exit code is 0 or 2, never a traceback;
- every stderr line is ``podmuster: ...``; an error line names the file and the object
  (``Kind namespace/name``, or the document's position) and then the field;
- nothing is lost: every object the mutation did not touch is still grouped, scheduled
  or simulated as it is without the mutation.

The example count comes from the hypothesis profile (tests/conftest.py); ``simulate``,
a run of simulated time per example, takes a quarter of it.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from functools import cache
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
import yaml
from fuzz_mutations import (
    FIXTURES,
    Mutation,
    dotted,
    identity,
    load,
    metadata_map_targets,
    mutations,
    names_object_and_field,
    not_a_string_map,
    template_map_targets,
    template_not_a_string_map,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from podmuster.cli import main

WORKLOADS = load("workloads.yaml")
SNAPSHOT = load("snapshot.yaml")
NOW = "2026-01-01T00:00:00Z"
FEW = max(1, settings.default.max_examples // 4)
"""Examples of ``simulate`` (the slowest): a quarter of the profile's count."""


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = StringIO(), StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def _write(directory: Path, docs: list[Any], as_json: bool) -> Path:
    """``docs`` in one file: a JSON ``v1 List``, or YAML documents."""
    if as_json:
        path = directory / "input.json"
        path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": docs}))
    else:
        path = directory / "input.yaml"
        path.write_text(yaml.safe_dump_all(docs, allow_unicode=True))
    return path


@pytest.fixture
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as directory:
        yield Path(directory)


def _fresh(workdir: Path) -> Path:
    """A new empty directory for one example (the fixture serves them all)."""
    return Path(tempfile.mkdtemp(dir=workdir))


def _check_stderr(err: str, code: int, path: Path, mutation: Mutation, docs: list[Any]) -> None:
    """The contract on stderr: no traceback, one well-formed line per problem."""
    assert "Traceback" not in err
    assert code in (0, 2), err
    errors = []
    for line in err.splitlines():
        assert line.startswith("podmuster: "), line
        if not line.startswith("podmuster: warning: "):
            errors.append(line)
    for line in errors:  # podmuster: FILE: OBJECT: FIELD: message, or FILE: document N: message
        assert line.startswith(f"podmuster: {path}: "), line
        parts = line[len(f"podmuster: {path}: ") :].split(": ")
        assert len(parts) >= (2 if parts[0].startswith("document ") else 3), line
    if code == 2 and mutation.op != "duplicate":
        kind, namespace, name = identity(docs[mutation.index])
        short = name[:200]
        named = [
            line
            for line in errors
            if "document " in line or f"/{short}" in line or f" {short}" in line
        ]
        assert named, f"no error line names the mutated {kind} {namespace}/{name}: {err}"


def _lost(before: set[str], after: set[str], mutation: Mutation, docs: list[Any]) -> set[str]:
    """What ``before`` had and ``after`` lacks, other than what the mutated object made."""
    name = identity(docs[mutation.index])[2]
    return {entry for entry in before - after if not name or name not in entry}


def _pod_group_names(output: str) -> set[str]:
    document = json.loads(output)
    return {item["metadata"]["name"] for item in document["items"]}


@cache
def _grouped_before() -> frozenset[str]:
    with tempfile.TemporaryDirectory() as directory:
        path = _write(Path(directory), WORKLOADS, as_json=True)
        code, out, err = _run(["group", "-o", "json", str(path)])
    assert code == 0, err
    assert not err, err
    return frozenset(_pod_group_names(out))


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutation=mutations(WORKLOADS), as_json=...)
def test_group_keeps_the_contract(workdir: Path, mutation: Mutation, as_json: bool) -> None:
    path = _write(_fresh(workdir), mutation.apply(WORKLOADS), as_json)
    code, out, err = _run(["group", "-o", "json", str(path)])
    _check_stderr(err, code, path, mutation, WORKLOADS)
    lost = _lost(set(_grouped_before()), _pod_group_names(out), mutation, WORKLOADS)
    assert not lost, f"{mutation}: lost {lost}; stderr: {err}"


def _gang_of(doc: Any) -> str:
    """``ns-a`` or ``ns-b`` for the objects of one gang; ``""`` for nodes and queues."""
    return identity(doc)[1]


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutation=mutations(SNAPSHOT), as_json=..., rounds=...)
def test_schedule_keeps_the_contract(
    workdir: Path, mutation: Mutation, as_json: bool, rounds: bool
) -> None:
    """With ``rounds``, three rounds with ``--explain``: the decisions are carried out too."""
    path = _write(_fresh(workdir), mutation.apply(SNAPSHOT), as_json)
    more = ["--rounds", "3", "--explain"] if rounds else []
    code, out, err = _run(["schedule", str(path), "--now", NOW, "-o", "json", *more])
    _check_stderr(err, code, path, mutation, SNAPSHOT)
    first = json.loads(out)["rounds"][0] if rounds else json.loads(out)
    outcomes = {g["podGroup"]: g["outcome"] for g in first["podGroups"]}
    touched = _gang_of(SNAPSHOT[mutation.index])
    for gang in ("ns-a/pg-a", "ns-b/pg-b"):
        if touched and not gang.startswith(f"{touched}/"):
            # the other gang's objects are as they were: it is still placed
            assert outcomes.get(gang) in ("scheduled", "pipelined"), f"{mutation}: {out}{err}"
        elif not touched and not mutation.touches_identity():
            assert gang in outcomes, f"{mutation}: {gang} lost: {out}{err}"


def _simulated_workloads(output: str) -> set[str]:
    return {job["workload"] for job in json.loads(output)["job_results"]}


def _simulate(directory: Path) -> tuple[int, str, str]:
    cluster = str(FIXTURES / "cluster.yaml")
    argv = ["simulate", "--cluster", cluster, "--workloads", str(directory), "-o", "json"]
    return _run([*argv, "--no-progress"])


@cache
def _simulated_before() -> frozenset[str]:
    with tempfile.TemporaryDirectory() as directory:
        _write(Path(directory), WORKLOADS, as_json=False)
        code, out, err = _simulate(Path(directory))
    assert code == 0, err
    assert not err, err
    return frozenset(_simulated_workloads(out))


@settings(max_examples=FEW, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutation=mutations(WORKLOADS), as_json=...)
def test_simulate_keeps_the_contract(workdir: Path, mutation: Mutation, as_json: bool) -> None:
    directory = _fresh(workdir)
    path = _write(directory, mutation.apply(WORKLOADS), as_json)
    code, out, err = _simulate(directory)
    _check_stderr(err, code, path, mutation, WORKLOADS)
    lost = _lost(set(_simulated_before()), _simulated_workloads(out), mutation, WORKLOADS)
    assert not lost, f"{mutation}: lost {lost}; stderr: {err}"


# --- labels and annotations that are not a map of strings, on every kind ------------------
# The general mutations above reach these fields by chance; these cover each document's
# labels and annotations (so every kind each command reads) and also ask that the error
# line names the object and the field, not only that the others are served.


def _target_id(docs: list[dict[str, Any]]) -> Any:
    return lambda target: "-".join((*identity(docs[target[0]])[::2], target[1]))


def _broken_map(
    directory: Path,
    docs: list[dict[str, Any]],
    target: tuple[int, str],
    data: st.DataObject,
    as_json: bool,
    command: list[str],
) -> tuple[str, Mutation]:
    """Run ``command`` (``{}`` for the input's path, or nothing for simulate's directory) on
    ``docs`` with the target map broken: exit 2 and a line naming the object and field."""
    mutation = data.draw(not_a_string_map(*target))
    path = _write(directory, mutation.apply(docs), as_json)
    if command:
        code, out, err = _run([str(path) if arg == "{}" else arg for arg in command])
    else:
        code, out, err = _simulate(directory)
    _check_stderr(err, code, path, mutation, docs)
    assert code == 2, err
    assert names_object_and_field(err, str(path), docs[target[0]], target[1]), err
    return out, mutation


@pytest.mark.parametrize("target", metadata_map_targets(WORKLOADS), ids=_target_id(WORKLOADS))
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), as_json=...)
def test_group_names_the_labels_that_are_not_a_map(
    workdir: Path, target: tuple[int, str], data: st.DataObject, as_json: bool
) -> None:
    command = ["group", "-o", "json", "{}"]
    out, mutation = _broken_map(_fresh(workdir), WORKLOADS, target, data, as_json, command)
    lost = _lost(set(_grouped_before()), _pod_group_names(out), mutation, WORKLOADS)
    assert not lost, f"{mutation}: lost {lost}"


@pytest.mark.parametrize("target", metadata_map_targets(SNAPSHOT), ids=_target_id(SNAPSHOT))
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), as_json=...)
def test_schedule_names_the_labels_that_are_not_a_map(
    workdir: Path, target: tuple[int, str], data: st.DataObject, as_json: bool
) -> None:
    command = ["schedule", "{}", "--now", NOW, "-o", "json"]
    out, mutation = _broken_map(_fresh(workdir), SNAPSHOT, target, data, as_json, command)
    outcomes = {g["podGroup"]: g["outcome"] for g in json.loads(out)["podGroups"]}
    touched = _gang_of(SNAPSHOT[target[0]])
    for gang in ("ns-a/pg-a", "ns-b/pg-b"):
        if touched and not gang.startswith(f"{touched}/"):
            assert outcomes.get(gang) in ("scheduled", "pipelined"), f"{mutation}: {out}"


@pytest.mark.parametrize("target", metadata_map_targets(WORKLOADS), ids=_target_id(WORKLOADS))
@settings(
    max_examples=max(1, FEW // 5), suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_simulate_names_the_labels_that_are_not_a_map(
    workdir: Path, target: tuple[int, str], data: st.DataObject
) -> None:
    out, mutation = _broken_map(_fresh(workdir), WORKLOADS, target, data, False, [])
    lost = _lost(set(_simulated_before()), _simulated_workloads(out), mutation, WORKLOADS)
    assert not lost, f"{mutation}: lost {lost}"


# --- the same in pod and Job templates --------------------------------------------------
# Read by the same reader as the object's own (crds/metadata.py): the line names the
# workload and the template's field (a RayJob's through the RayCluster it creates).

TEMPLATE_TARGETS = template_map_targets(WORKLOADS)


@pytest.mark.parametrize(
    "target",
    TEMPLATE_TARGETS,
    ids=lambda t: f"{identity(WORKLOADS[t[0]])[0]}-{dotted(t[1])}-{t[2]}",
)
@settings(
    max_examples=max(1, FEW // 5), suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_group_names_the_template_labels_that_are_not_a_map(
    workdir: Path, target: tuple[int, tuple[str | int, ...], str], data: st.DataObject
) -> None:
    index, template, field = target
    mutation = data.draw(template_not_a_string_map(index, template, field))
    path = _write(_fresh(workdir), mutation.apply(WORKLOADS), as_json=False)
    code, out, err = _run(["group", "-o", "json", str(path)])
    _check_stderr(err, code, path, mutation, WORKLOADS)
    assert code == 2, err
    kind, namespace, name = identity(WORKLOADS[index])
    line = f"podmuster: {path}: {kind} {namespace}/{name}: "
    named = f"template.metadata.{field}"
    assert any(
        ln.startswith(line) and (f"{named}: " in ln or f"{named}[" in ln) for ln in err.splitlines()
    ), err
    lost = _lost(set(_grouped_before()), _pod_group_names(out), mutation, WORKLOADS)
    assert not lost, f"{mutation}: lost {lost}"
