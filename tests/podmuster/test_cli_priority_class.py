"""``podmuster schedule`` with a PodGroup naming a PriorityClass that does not exist.

cli-contract: an unknown priority class is not an input error but a reason on the pod
group concerned. The group is still scheduled with the fallback priority (the
``globalDefault`` class, else 50); a group left pending shows the note first among its
reasons, a group that was placed shows it only with ``--explain``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from podmuster.cli import main
from tests.kits import worlds as st

NOTE_50 = "PriorityClassNotFound: priority class 'gold' does not exist; priority 50 is used"


def _schedule(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], objects: list[Any], *flags: str
) -> tuple[int, dict[str, list[str]], str]:
    path = tmp_path / "snapshot.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objects}))
    code = main(["schedule", str(path), *flags])
    captured = capsys.readouterr()
    out = yaml.safe_load(captured.out)
    return code, {g["podGroup"]: g["reasons"] for g in out["podGroups"]}, captured.err


def _cluster() -> list[Any]:
    return [
        st.node("n1", gpus=4),
        st.queue("q", gpu_quota=4),
        *st.job("fits", "q", 2, gpus=1, priority_class="gold"),
        *st.job("too-big", "q", 2, gpus=4, priority_class="gold"),
        *st.job("known", "q", 1, gpus=1, priority_class="train"),
    ]


def test_a_pending_group_shows_the_unknown_class_among_its_reasons(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, reasons, err = _schedule(tmp_path, capsys, _cluster())
    assert (code, err) == (0, "")
    assert reasons["default/too-big"][0] == NOTE_50
    assert len(reasons["default/too-big"]) > 1  # why it did not fit is still said
    assert reasons["default/fits"] == []  # placed: the note is shown only when explaining
    assert reasons["default/known"] == []


def test_a_placed_group_carries_the_note_with_explain(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, reasons, _ = _schedule(tmp_path, capsys, _cluster(), "--explain")
    assert code == 0
    assert reasons["default/fits"] == [NOTE_50]
    assert reasons["default/known"] == []


def test_the_note_names_the_global_default_priority_used(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    default = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "house"},
        "value": 77,
        "globalDefault": True,
    }
    _, reasons, _ = _schedule(tmp_path, capsys, [*_cluster(), default])
    assert reasons["default/too-big"][0] == NOTE_50.replace("50", "77")
