"""A page in a real headless browser (Debian's chromium with chromedriver, via selenium).

Why: "the page looks right" is checked where it is seen. The simulator's HTML pages
(the run report, the sweep page) are each loaded at a desktop and a narrow width and
must load without console errors, never spill sideways (no element reaches past the
viewport; a wide table scrolls inside its own container instead of widening the
page) and show every image decoded (naturalWidth > 0). The browser is installed by
``.ci/run`` with apt-get; without it (or without selenium) a test that asks for it
skips and says why.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

WIDTHS = (1400, 800)

# Elements that reach past the viewport's left or right edge, outside a scroll container.
_OVERFLOWING = """
const width = document.documentElement.clientWidth;
const out = [];
for (const element of document.body.querySelectorAll("*")) {
  if (element.closest(".scroll") && !element.classList.contains("scroll")) continue;
  const box = element.getBoundingClientRect();
  if (box.width === 0 && box.height === 0) continue;
  if (box.left < -1 || box.right > width + 1) {
    out.push(`${element.tagName.toLowerCase()}.${element.className}: ${box.left}..${box.right}`);
  }
}
return {width: width, page: document.documentElement.scrollWidth, overflowing: out};
"""

# Each table: does it fit its container, and if not, does the container scroll it?
_TABLES = """
return Array.from(document.querySelectorAll("table")).map((table) => {
  const box = table.parentElement;
  const style = getComputedStyle(box);
  return {
    fits: table.getBoundingClientRect().right <= box.getBoundingClientRect().right + 1,
    scrolls: ["auto", "scroll"].includes(style.overflowX) && box.scrollWidth > box.clientWidth,
    container: box.className,
  };
});
"""

_IMAGES = """
return Array.from(document.images).map((image) => ({
  alt: image.alt, complete: image.complete, width: image.naturalWidth,
  right: image.getBoundingClientRect().right,
}));
"""


def _executable(name: str, *others: str) -> str:
    for candidate in (name, *others):
        path = shutil.which(candidate)
        if path:
            return path
    pytest.skip(
        f"{name} is not installed (.ci/run installs chromium and chromium-driver with apt-get)"
    )


def chromium() -> Iterator[Any]:
    """A headless chromium driven by selenium that keeps the console log; quit afterwards."""
    webdriver = pytest.importorskip(
        "selenium.webdriver", reason="selenium is not installed (pip install -e '.[dev]')"
    )
    from selenium.webdriver.chrome.service import Service

    binary = _executable("chromium", "chromium-browser", "google-chrome")
    driver_path = _executable("chromedriver")
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def check_page(browser: Any, page: Path, width: int) -> tuple[list[Any], list[Any]]:
    """Load ``page`` at ``width`` px and check it: no console error, nothing past the
    viewport, each table fitting or scrolling in its ``scroll`` container, each image
    decoded and inside the viewport. The tables and the images, for counting."""
    browser.set_window_size(width, 900)
    browser.get(page.as_uri())
    browser.get_log("browser")  # drain what an earlier page left
    browser.refresh()
    assert browser.execute_script("return document.readyState") == "complete"
    severe = [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
    assert severe == [], severe

    layout = browser.execute_script(_OVERFLOWING)
    assert layout["width"] <= width
    assert layout["overflowing"] == [], layout
    assert layout["page"] <= layout["width"], "the page scrolls sideways"

    tables: list[Any] = browser.execute_script(_TABLES)
    for table in tables:
        assert table["fits"] or table["scrolls"], table
        assert table["container"] == "scroll", table

    images: list[Any] = browser.execute_script(_IMAGES)
    for image in images:
        assert image["complete"], image
        assert image["width"] > 0, image
        assert image["right"] <= layout["width"] + 1, image
    return tables, images
