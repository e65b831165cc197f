"""The report in a real headless browser (Debian's chromium with chromedriver, via selenium).

Why: "the page looks right" is checked where it is seen. At a desktop (1400 px)
and a narrow (800 px) width the page must load without console errors, show
every plot (each image decoded: naturalWidth > 0), and never spill sideways:
no element reaches past the viewport, and a wide table scrolls inside its own
container instead of widening the page (tests/kits/browser.py). The browser is
installed by ``.ci/run`` with apt-get; without it (or without selenium) the test
skips and says why.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from podmuster.cli import main
from tests.kits.browser import WIDTHS, check_page

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory, report_input: list[str]) -> Path:
    path = tmp_path_factory.mktemp("report") / "report.html"
    compare = ["--compare", str(FIXTURES / "spread.yaml"), "--label", "A=binpack today"]
    assert main([*report_input, *compare, "--report", str(path), "-o", "json"]) == 0
    return path


@pytest.mark.parametrize("width", WIDTHS)
def test_report_in_headless_chromium(browser: Any, report: Path, width: int) -> None:
    tables, images = check_page(browser, report, width)
    assert len(tables) >= 6  # configurations, cluster, queues, summary, per-queue, jobs
    assert len(images) == 5  # allocation, fair share A and B, wait CDF, pending reasons
