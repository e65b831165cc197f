"""Reading objects on input (docs/cli.md §1) and the one-line errors about them.

Aspects: Lists (``kind: List`` and typed ``PodList`` with bare items),
multi-document YAML, JSON, several files, ``-`` for stdin, order and position
indexes, derived uids and creation timestamps, timestamps kept as strings,
every error case as exactly one line naming file/object/field, typed-model
validation errors turned into InputErrors, and speed on a 20,000-pod snapshot.
"""

from __future__ import annotations

import gc
import io
import json
import uuid
from pathlib import Path

import pytest

from crds import errors
from crds.documents import (
    EPOCH,
    UID_NAMESPACE,
    SourcedObject,
    default_creation_timestamp,
    default_uid,
    load_documents,
)
from crds.podgroup import PodGroup

POD = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: team-a\n"


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def names(objs: list[SourcedObject]) -> list[str]:
    return [o.name for o in objs]


def test_mixed_inputs_keep_order_and_positions(tmp_path: Path) -> None:
    listing = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            json.loads(json.dumps({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}))
        ],
    }
    first = write(tmp_path, "a.yaml", POD.format(name="p1") + "---\n---\n" + POD.format(name="p2"))
    second = write(tmp_path, "b.json", json.dumps(listing))
    stdin = io.StringIO(POD.format(name="p3"))
    objs = load_documents([first, "-", second], stdin=stdin)
    assert names(objs) == ["p1", "p2", "p3", "n1"]
    assert [o.index for o in objs] == [0, 1, 2, 3]
    assert [o.source for o in objs] == [str(first), str(first), "<stdin>", str(second)]
    assert objs[3].kind == "Node"
    assert objs[3].namespace is None
    assert objs[0].describe() == "Pod team-a/p1"


def test_typed_list_items_inherit_kind_and_api_version(tmp_path: Path) -> None:
    raw = {
        "apiVersion": "v1",
        "kind": "PodList",
        "metadata": {},
        "items": [{"metadata": {"name": "a"}}],
    }
    (obj,) = load_documents([write(tmp_path, "pods.json", json.dumps(raw))])
    assert (obj.kind, obj.api_version, obj.name) == ("Pod", "v1", "a")


def test_defaults_uid_and_creation_timestamp_from_position(tmp_path: Path) -> None:
    explicit = POD.format(name="old") + "  uid: u-1\n  creationTimestamp: 2020-01-01T00:00:00Z\n"
    path = write(tmp_path, "s.yaml", explicit + "---\n" + POD.format(name="p1"))
    old, p1 = load_documents([path])
    assert old.obj["metadata"]["uid"] == "u-1"
    assert (
        old.obj["metadata"]["creationTimestamp"] == "2020-01-01T00:00:00Z"
    )  # a string, not datetime
    assert p1.obj["metadata"]["uid"] == default_uid("Pod", "team-a", "p1")
    assert p1.obj["metadata"]["creationTimestamp"] == "2024-01-01T00:01:00Z"
    assert default_creation_timestamp(0) == EPOCH.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert default_creation_timestamp(0) < default_creation_timestamp(1)


def test_default_uid_is_a_uuid5_of_kind_namespace_name() -> None:
    for kind, namespace, name in [("Pod", "a", "x"), ("Queue", None, "q"), ("Pod", "ns", "ünï")]:
        expected = uuid.uuid5(UID_NAMESPACE, f"{kind}/{namespace or ''}/{name}")
        assert default_uid(kind, namespace, name) == str(expected)


def test_default_uids_are_stable_and_distinct_per_kind() -> None:
    assert default_uid("Pod", "a", "x") == default_uid("Pod", "a", "x")
    assert default_uid("Pod", "a", "x") != default_uid("BindRequest", "a", "x")
    assert default_uid("Pod", "a", "x") != default_uid("Pod", "b", "x")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("kind: Pod\nmetadata:\n  name: [x\n", "f.yaml: line 4 column 1: invalid YAML: "),
        ("- 1\n", "f.yaml: document 1: expected an object (mapping), got list"),
        ("kind: Pod\nmetadata: {name: a}\n", "f.yaml: Pod a: apiVersion: missing or not a string"),
        (
            "apiVersion: v1\nmetadata: {name: a}\n",
            "f.yaml: object a: kind: missing or not a string",
        ),
        (
            "apiVersion: v1\nkind: Pod\n",
            "f.yaml: Pod (document 1): metadata: missing or not an object",
        ),
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {namespace: ns}\n",
            "f.yaml: Pod (document 1): metadata.name: missing or not a string",
        ),
        (
            "apiVersion: v1\nkind: List\nitems: [3]\n",
            "f.yaml: document 1: items[0]: expected an object (mapping), got int",
        ),
    ],
)
def test_bad_documents_give_one_line(tmp_path: Path, text: str, expected: str) -> None:
    with pytest.raises(errors.InputError) as caught:
        load_documents([write(tmp_path, "f.yaml", text)])
    message = str(caught.value).replace(str(tmp_path) + "/", "")
    assert message.startswith(expected)
    assert "\n" not in message


def test_bad_json_file_names_line(tmp_path: Path) -> None:
    with pytest.raises(errors.InputError, match=r"x\.json: line 2 column 1: invalid JSON"):
        load_documents([write(tmp_path, "x.json", '{"a": 1,\n}')])


def test_unreadable_sources(tmp_path: Path) -> None:
    with pytest.raises(errors.InputError, match=r"no such file$"):
        load_documents([tmp_path / "missing.yaml"])
    with pytest.raises(errors.InputError, match="is a directory"):
        load_documents([tmp_path])
    binary = tmp_path / "b.yaml"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(errors.InputError, match="not UTF-8"):
        load_documents([binary])


def test_input_error_format_and_helpers() -> None:
    pod = {"kind": "Pod", "metadata": {"name": "train-0", "namespace": "team-a"}}
    err = errors.object_error(
        "snapshot.yaml",
        pod,
        ["spec", "containers", 0, "resources", "requests", "cpu"],
        'invalid quantity "1.2.3"',
    )
    assert str(err) == (
        "snapshot.yaml: Pod team-a/train-0: "
        'spec.containers[0].resources.requests.cpu: invalid quantity "1.2.3"'
    )
    assert (err.source, err.obj, err.field) == ("snapshot.yaml", "Pod team-a/train-0", err.field)
    queue = {"kind": "Queue", "metadata": {"name": "q"}}
    assert (
        str(errors.object_error("q.yaml", queue, "spec", "bad\nthing"))
        == "q.yaml: Queue q: spec: bad thing"
    )
    assert str(errors.InputError("oops")) == "oops"


def test_to_model_turns_validation_errors_into_input_errors(tmp_path: Path) -> None:
    text = (
        "apiVersion: scheduling.run.ai/v2alpha2\nkind: PodGroup\n"
        "metadata: {name: pg, namespace: ns}\n"
        "status: {resourcesStatus: {requested: {cpu: 1.2.3}}}\n"
        "---\n"
        "apiVersion: scheduling.run.ai/v2alpha2\nkind: PodGroup\n"
        "metadata: {name: pg2, namespace: ns}\nspec: {minmember: 2}\n"
        "---\n"
        "apiVersion: scheduling.run.ai/v2alpha2\nkind: PodGroup\n"
        "metadata: {name: pg3, namespace: ns}\nspec: {minMember: -1, subGroups: [{name: a}]}\n"
    )
    bad_quantity, typo, too_small = load_documents([write(tmp_path, "pg.yaml", text)])
    with pytest.raises(errors.InputError) as caught:
        bad_quantity.to_model(PodGroup)
    assert str(caught.value).endswith(
        'pg.yaml: PodGroup ns/pg: status.resourcesStatus.requested.cpu: invalid quantity "1.2.3": '
        "more than one decimal point, got '1.2.3'"
    )
    with pytest.raises(
        errors.InputError, match=r"PodGroup ns/pg2: spec\.minmember: unknown field, got 2$"
    ):
        typo.to_model(PodGroup)
    with pytest.raises(errors.InputError, match=r"spec\.minMember: Input should be greater than"):
        too_small.to_model(PodGroup)
    assert bad_quantity.error("spec", "x").obj == "PodGroup ns/pg"


def _snapshot(pods: int) -> str:
    items = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"train-{i}",
                "namespace": f"team-{i % 20}",
                "labels": {"kai.scheduler/queue": f"team-{i % 20}", "app": "train"},
                "annotations": {"pod-group-name": f"pg-{i // 8}"},
            },
            "spec": {
                "schedulerName": "kai-scheduler",
                "containers": [
                    {
                        "name": "main",
                        "image": "ubuntu",
                        "resources": {
                            "requests": {"cpu": "500m", "memory": "2Gi", "nvidia.com/gpu": "1"}
                        },
                    }
                ],
            },
            "status": {"phase": "Pending"},
        }
        for i in range(pods)
    ]
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": items})


def test_twenty_thousand_pods_load_with_positional_defaults(tmp_path: Path) -> None:
    """A large JSON List loads whole; its speed is measured by ``make bench``, not here."""
    path = write(tmp_path, "snapshot.json", _snapshot(20_000))
    objs = load_documents([path])
    assert len(objs) == 20_000
    assert objs[-1].obj["metadata"]["creationTimestamp"] == default_creation_timestamp(19_999)


def test_garbage_collector_state_is_restored(tmp_path: Path) -> None:
    assert gc.isenabled()
    load_documents([write(tmp_path, "ok.yaml", POD.format(name="p"))])
    assert gc.isenabled()
    with pytest.raises(errors.InputError):
        load_documents([write(tmp_path, "bad.yaml", "- 1\n")])
    assert gc.isenabled()


def test_with_problems_a_bad_object_is_left_out_and_the_rest_read(tmp_path: Path) -> None:
    """docs/cli.md "Bad input": one object that cannot be read never stops the others."""
    text = (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\n---\n"
        "- 1\n---\n"
        "kind: Pod\nmetadata: {name: b}\n---\n"
        "apiVersion: v1\nkind: List\nitems: [{apiVersion: v1, kind: Pod, metadata: {}}, 3]\n---\n"
        "apiVersion: v1\nkind: Pod\nmetadata: {name: c}\n"
    )
    problems: list[errors.InputError] = []
    loaded = load_documents([write(tmp_path, "f.yaml", text)], problems=problems)
    assert [item.name for item in loaded] == ["a", "c"]
    assert [str(p).replace(str(tmp_path) + "/", "") for p in problems] == [
        "f.yaml: document 2: expected an object (mapping), got list",
        "f.yaml: Pod b: apiVersion: missing or not a string",
        "f.yaml: Pod (document 4: items[0]): metadata.name: missing or not a string",
        "f.yaml: document 4: items[1]: expected an object (mapping), got int",
    ]


def test_an_object_given_twice_is_one_line_and_the_first_copy_is_kept(tmp_path: Path) -> None:
    """Two dumps concatenated: the pod Running in the first and Pending in the second was
    counted twice (bound again onto the node its Running copy filled), and which copy won
    depended on the order of the files."""
    running = POD.format(name="p") + "status: {phase: Running}\n"
    pending = POD.format(name="p") + "status: {phase: Pending}\n"
    other_namespace = "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: team-b}\n"
    node = "apiVersion: v1\nkind: Node\nmetadata: {name: p}\n"
    first = write(tmp_path, "first.yaml", running)
    second = write(tmp_path, "second.yaml", f"{pending}---\n{other_namespace}---\n{node}")
    problems: list[errors.InputError] = []
    loaded = load_documents([first, second], problems=problems)
    assert [(item.kind, item.namespace, item.obj["status"]["phase"]) for item in loaded[:1]] == [
        ("Pod", "team-a", "Running")
    ]
    assert [(item.kind, item.namespace) for item in loaded[1:]] == [
        ("Pod", "team-b"),
        ("Node", None),
    ]
    assert [str(p) for p in problems] == [
        f"{second}: Pod team-a/p: metadata.name: given twice (first in {first} (document 1)); the first is kept"
    ]
    with pytest.raises(errors.InputError, match="given twice"):
        load_documents([first, first])


@pytest.mark.parametrize("items", ["", "items: null\n"])
def test_an_empty_list_may_leave_out_its_items(tmp_path: Path, items: str) -> None:
    """A nil list prints as ``items: null`` (or not at all): an empty List, not a nameless object."""
    text = f"apiVersion: v1\nkind: List\nmetadata: {{resourceVersion: ''}}\n{items}"
    assert load_documents([write(tmp_path, "empty.yaml", text)]) == []


def test_list_items_of_the_wrong_type_name_the_field(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.yaml", "apiVersion: v1\nkind: List\nitems: pods\n")
    with pytest.raises(errors.InputError) as caught:
        load_documents([path])
    assert str(caught.value) == f"{path}: document 1: items: expected a list, got str"
