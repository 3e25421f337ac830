"""Open the built documentation in a real headless browser and take screenshots.

    apt-get install chromium            # Debian's; once
    mkdocs build --strict && python docs/screenshots.py [OUTPUT_DIR]

Serves ``site/`` on a loopback port, then for the home page, the ``Tensor`` API page and
the common-mistakes page: takes a 1280-wide screenshot (``OUTPUT_DIR``, default
``site/screenshots``), reads the rendered DOM, and fails (exit 1) if the page logged a
console error or its main content is empty.
"""

from __future__ import annotations

import functools
import html
import http.server
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "site"
PAGES = {"home": "generated/", "tensor-api": "api/tensor/", "mistakes": "generated/mistakes/"}
CHROMIUM_FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run"]


def _browser() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    raise SystemExit("no Chromium found: apt-get install chromium")


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        pass


def _serve() -> tuple[http.server.ThreadingHTTPServer, int]:
    handler = functools.partial(_Quiet, directory=str(SITE))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, server.server_address[1]


def _main_text(dom: str) -> str:
    found = re.search(r'<article[^>]*class="[^"]*md-content__inner[^"]*"[^>]*>(.*?)</article>', dom, re.S)
    if found is None:
        return ""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", found.group(1))).split())


def check(name: str, url: str, browser: str, out: Path) -> list[str]:
    problems: list[str] = []
    shot = out / f"{name}.png"
    subprocess.run(
        [browser, *CHROMIUM_FLAGS, "--window-size=1280,1600", f"--screenshot={shot}", url],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if not shot.exists() or shot.stat().st_size < 10_000:
        problems.append(f"{name}: no screenshot")
    dumped = subprocess.run(
        [browser, *CHROMIUM_FLAGS, "--enable-logging=stderr", "--v=0", "--virtual-time-budget=3000", "--dump-dom", url],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    errors = [
        line
        for line in dumped.stderr.splitlines()
        if "CONSOLE" in line and ("error" in line.lower() or "uncaught" in line.lower())
    ]
    problems += [f"{name}: console error: {line.strip()}" for line in errors]
    text = _main_text(dumped.stdout)
    if len(text) < 200:
        problems.append(f"{name}: main content is empty ({len(text)} characters)")
    print(
        f"{name}: {shot} ({shot.stat().st_size if shot.exists() else 0:,} bytes), {len(text):,} characters of content"
    )
    return problems


def main() -> None:
    if not (SITE / "index.html").exists():
        raise SystemExit("no built site: run mkdocs build --strict first")
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else SITE / "screenshots"
    out.mkdir(parents=True, exist_ok=True)
    browser = _browser()
    server, port = _serve()
    try:
        problems = [
            p for name, path in PAGES.items() for p in check(name, f"http://127.0.0.1:{port}/{path}", browser, out)
        ]
    finally:
        server.shutdown()
    if problems:
        print("\n".join(problems), file=sys.stderr)
        raise SystemExit(1)
    print("every page rendered, with content and no console error")


if __name__ == "__main__":
    main()
