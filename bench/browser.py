"""The trace viewer in a real headless Chromium, for end-to-end tests and the page-load
benchmark: Debian's `chromium` and `chromium-driver` driven by selenium (dev extra).

Nothing is downloaded: the browser and its driver are the system's, and a fresh profile
folder is used for each browser so no state leaks between runs.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

if TYPE_CHECKING:
    from selenium.webdriver.chrome.webdriver import WebDriver

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)
RENDERED_MARK = "bigloop:steps-rendered"


def missing() -> str | None:
    """Why the browser cannot run here (None when it can)."""
    for path, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if shutil.which(path) is None:
            return f"{path} not found: install Debian's {package} (scripts/setup.sh does, as root)"
    return None


@contextmanager
def chromium(*, width: int = 1400, height: int = 1000) -> Iterator[WebDriver]:
    """A headless Chromium with a fresh profile, closed on exit."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    with tempfile.TemporaryDirectory(prefix="bigloop-chromium-") as profile:
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for flag in (*FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}"):
            options.add_argument(flag)
        driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
        try:
            yield driver
        finally:
            driver.quit()


def open_run(driver: WebDriver, base_url: str, run_id: str, *, timeout: float = 20.0) -> float:
    """Load the page of run `run_id` and wait until its steps are rendered; returns the
    milliseconds from navigation start to the frame after the steps were rendered (the
    page's `bigloop:steps-rendered` performance mark)."""
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get("about:blank")  # a full navigation even when the page shows this run already
    driver.get(f"{base_url}/#/run/{quote(run_id, safe='')}")
    WebDriverWait(driver, timeout).until(
        lambda d: d.execute_script("return document.body.dataset.rendered") == run_id
    )
    script = f"return performance.getEntriesByName({RENDERED_MARK!r})[0].startTime"
    return float(driver.execute_script(script))


def screenshot(driver: WebDriver, path: Path, *, full_page: bool = True) -> Path:
    """Save the page as a PNG at `path` (the whole page, up to 8,000 pixels high)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if full_page:
        size = driver.get_window_size()
        height = driver.execute_script("return document.documentElement.scrollHeight")
        driver.set_window_size(size["width"], min(int(height) + 20, 8000))
    driver.save_screenshot(str(path))
    return path
