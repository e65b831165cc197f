"""The one writer of command results: YAML or JSON, key order kept, multi-line text as blocks.

Why: users diff and script against the CLI's output (docs/cli.md), so its form must not
drift; PyYAML is loaded only when YAML is written, and the dumper built then must be the
same every time.
"""

from __future__ import annotations

import io

from podmuster import output

DATA = {"zeta": 1, "alpha": ["a", "b"], "text": "line one\nline two\n", "none": None}


def _written(fmt: str) -> str:
    stream = io.StringIO()
    output.write(DATA, fmt, stream)
    return stream.getvalue()


def test_json_keeps_the_key_order_indented_with_a_final_newline() -> None:
    assert _written("json") == (
        '{\n  "zeta": 1,\n  "alpha": [\n    "a",\n    "b"\n  ],\n'
        '  "text": "line one\\nline two\\n",\n  "none": null\n}\n'
    )


def test_yaml_keeps_the_key_order_and_writes_multi_line_text_as_a_block() -> None:
    expected = "zeta: 1\nalpha:\n- a\n- b\ntext: |\n  line one\n  line two\nnone: null\n"
    assert _written("yaml") == expected
    assert _written("yaml") == expected  # the dumper built once, the same the second time


def test_several_documents_are_separated_by_dashes() -> None:
    stream = io.StringIO()
    output.write_all([{"a": 1}, {"b": "x\ny"}], stream)
    assert stream.getvalue() == "a: 1\n---\nb: |-\n  x\n  y\n"
