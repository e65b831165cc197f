"""The sweep page in a real headless browser (Debian's chromium with chromedriver, via selenium).

Why: the sweep's page (``simulate --sweep ... --report``) is read in a browser like the
run report: at a desktop (1400 px) and a narrow (800 px) width it must load without
console errors, never spill sideways (its wide points and queues tables scroll in their
own containers) and show its trade-off plot decoded (tests/kits/browser.py). The page is
built from the 4-point grid of test_sim_sweep.py, run in this process (--sweep-local).
Without the browser (or selenium) the test skips and says why.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from podmuster.cli import main
from tests.kits.browser import WIDTHS, check_page

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("sweep") / "sweep.html"
    argv = ["simulate", "--sweep", str(FIXTURES / "sweep" / "grid.yaml"), "--sweep-local"]
    assert main([*argv, "--no-progress", "--report", str(path), "-o", "json"]) == 0
    return path


@pytest.mark.parametrize("width", WIDTHS)
def test_sweep_page_in_headless_chromium(browser: Any, page: Path, width: int) -> None:
    tables, images = check_page(browser, page, width)
    assert len(tables) == 3  # variants, points, queues
    assert tables[1]["scrolls"]  # the points table, wider than the page, scrolls in its box
    assert [image["alt"] for image in images] == ["utilisation vs wait per point"]
