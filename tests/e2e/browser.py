"""A headless chromium for e2e pages (Debian's chromium + chromedriver, via selenium).

Why: a web page users meet live is checked where it is seen, in a real browser. Without
chromium, chromedriver or selenium the calling test skips and says which is missing
(``.ci/run`` installs them with apt-get).
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

PROGRAMS = {"chromium": ("chromium", "chromium-browser", "google-chrome"), "chromedriver": ()}


def find(program: str) -> str:
    """The first of ``program``'s names on PATH, else skip the test naming it."""
    for name in (program, *PROGRAMS[program]):
        found = shutil.which(name)
        if found:
            return found
    pytest.skip(f"{program} is not on PATH (.ci/run installs chromium and chromium-driver)")


@contextlib.contextmanager
def headless(width: int = 1400, height: int = 1000) -> Iterator[Any]:
    """A selenium Chrome driver on headless chromium; quit when the block ends."""
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = find("chromium")
    flags = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage")
    for flag in (*flags, f"--window-size={width},{height}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(find("chromedriver")), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def console_errors(driver: Any) -> list[Any]:
    """The page's console entries of level SEVERE since the last call."""
    return [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
