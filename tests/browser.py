"""A real browser for the tests of pages tareador writes: Debian's Chromium, headless, driven by
Selenium through Debian's chromedriver (``make deps`` installs both; nothing downloads a browser).

Chromium run as root needs these flags, and a fresh profile each time, or it tries to reach the
network (updates, sync, field trials) that the machine does not have. The network is also turned
off in the browser itself, so a page that needed anything from outside its file would show it.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

import pytest

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--window-size=1300,1000")


def chromium():
    """A Selenium driver of headless Chromium, the network off; skips the test when they are missing."""
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        pytest.skip("Chromium and chromedriver are not installed; `make deps` installs them (Debian's chromium, "
                    "chromium-driver)")
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed; `make deps` installs it")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    profile = tempfile.mkdtemp(prefix="chromium-profile-")
    for flag in (*FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_network_conditions(offline=True, latency=0, download_throughput=0, upload_throughput=0)
    driver.profile_dir = profile
    return driver


def quit_browser(driver) -> None:
    driver.quit()
    shutil.rmtree(driver.profile_dir, ignore_errors=True)


DRAWN = """const roots = [...document.querySelectorAll('[data-root-id]')].map(e => e.dataset.rootId);
return roots.length > 0 && !!window.Bokeh && !!Bokeh.index && roots.every(id => id in Bokeh.index);"""


def open_page(driver, path: Path, timeout: float = 120) -> list[dict]:
    """Load ``path`` from file://, wait until BokehJS has drawn every figure the page embeds (its
    ``data-root-id`` elements); returns the console's messages."""
    driver.get(path.resolve().as_uri())
    deadline = time.monotonic() + timeout
    while not driver.execute_script(DRAWN):
        if time.monotonic() > deadline:
            raise AssertionError(f"{path}: the figures were not drawn within {timeout} s")
        time.sleep(0.2)
    return driver.get_log("browser")


def errors(log: list[dict]) -> list[dict]:
    """What the console said at warning level or above (BokehJS logs its version at INFO)."""
    return [entry for entry in log if entry["level"] in ("WARNING", "SEVERE")]
