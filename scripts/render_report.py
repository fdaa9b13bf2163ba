#!/usr/bin/env python3
"""Screenshot a report page with headless Chromium (offline: no network, no GPU, throw-away profile).

    python scripts/render_report.py report/report.html report/screenshot.png [--width 1280 --height 2000]

Debian's ``chromium`` package provides the browser (``apt-get install -y chromium``).
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from typing import Optional

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")


def find_chromium() -> Optional[str]:
    """Path of a Chromium executable, or None."""
    for name in CHROMIUM_NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


def render(html_path: str, png_path: str, *, width: int = 1280, height: int = 2000, timeout_seconds: float = 60.0) -> str:
    """Write a ``width``×``height`` screenshot of ``html_path`` to ``png_path``; returns ``png_path``.

    Raises:
        FileNotFoundError: no Chromium, or no page.
        RuntimeError: Chromium failed or wrote no screenshot.
    """
    browser = find_chromium()
    if browser is None:
        raise FileNotFoundError(f"no Chromium found (tried {CHROMIUM_NAMES}); hint: apt-get install -y chromium")
    if not os.path.exists(html_path):
        raise FileNotFoundError(f"page not found: {html_path!r}")
    png_path = os.path.abspath(png_path)
    with tempfile.TemporaryDirectory(prefix="avalign-chromium-") as profile:
        command = [
            browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--hide-scrollbars", f"--user-data-dir={profile}", f"--screenshot={png_path}",
            f"--window-size={width},{height}", "file://" + os.path.abspath(html_path),
        ]
        proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout_seconds)
    if proc.returncode != 0 or not os.path.exists(png_path):
        raise RuntimeError(f"chromium exited {proc.returncode} without a screenshot: {proc.stderr[-2000:]}")
    return png_path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("html")
    parser.add_argument("png")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=2000)
    args = parser.parse_args(argv)
    print(render(args.html, args.png, width=args.width, height=args.height))
    return 0


if __name__ == "__main__":
    sys.exit(main())
