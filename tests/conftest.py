"""Shared fixtures: the built book, served on 127.0.0.1, and a real (headless) browser to read it.

* ``built_site``: path of the HTML folder, built once per session (``_build/html``, the same place and
  notebook cache as ``make book``, so a warm build takes seconds).
* ``site_url``: base URL of that folder served from a thread on 127.0.0.1.
* ``open_page``: ``open_page("book/intro.html") -> Visit`` opens a page in Chromium and records console
  errors, failed requests (HTTP >= 400) and every request that tried to leave the machine (aborted).

Chromium is Debian's (``make browser``); Playwright never downloads a browser here. Where Chromium,
Playwright or Jupyter Book is missing the tests skip, except under ``CI=true``, where they fail.
"""
from __future__ import annotations

import functools
import sys
import http.server
import os
import shutil
import threading
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
LOCAL_HOSTS = {"127.0.0.1", "localhost"}


def skip_or_fail(reason: str) -> None:
    """Skip locally; fail under CI=true, where a missing tool means the check did not run."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{reason} (CI=true: a missing tool fails instead of skipping)")
    pytest.skip(reason)


@pytest.fixture(autouse=True, scope="session")
def _answers_cache(tmp_path_factory):
    """Answers computed for the tests' own folders of runs are kept in a folder of the test session, not in the
    user's cache (``answer.grid``)."""
    old = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("cache"))
    yield
    if old is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = old


# --- the built book --------------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def built_site() -> Path:
    """The book built from the working tree (warnings as errors); fails the tests if the build fails."""
    if shutil.which("jupyter-book") is None and not Path(sys.executable).with_name("jupyter-book").exists():
        skip_or_fail("jupyter-book is not installed (pip install -e '.[book]')")
    from academic_bench.book import build as bookbuild

    try:
        html = bookbuild.build(quiet=True)
    except RuntimeError as exc:
        pytest.fail(str(exc))
    return html


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # keep the test output clean
        pass


@pytest.fixture(scope="session")
def site_url(built_site: Path):
    """Base URL (ending in '/') of the built book, served on 127.0.0.1 from a thread."""
    handler = functools.partial(_QuietHandler, directory=str(built_site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


# --- the browser -----------------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists():
        skip_or_fail(f"Chromium is not installed at {CHROMIUM} (make browser)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        skip_or_fail("playwright is not installed (pip install -e '.[test]')")
    pw = sync_playwright().start()
    try:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
    except Exception as exc:  # a broken Chromium install
        pw.stop()
        skip_or_fail(f"Chromium did not start: {exc}")
    yield b
    b.close()
    pw.stop()


@dataclass
class Visit:
    """One page opened in the browser, with what went wrong while it loaded."""

    page: object  # playwright.sync_api.Page
    url: str
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    external_requests: list[str] = field(default_factory=list)
    failed_responses: list[str] = field(default_factory=list)

    @property
    def problems(self) -> list[str]:
        return ([f"console error: {e}" for e in self.console_errors]
                + [f"page error: {e}" for e in self.page_errors]
                + [f"request left the machine: {u}" for u in self.external_requests]
                + [f"HTTP error: {r}" for r in self.failed_responses])


@pytest.fixture
def open_page(browser, site_url):
    """``open_page(path, wait_for_charts=True, width=None) -> Visit``: load a page of the book (in a window
    ``width`` px wide, 900 high, where given) and wait for its charts."""
    contexts = []

    def _open(path: str, wait_for_charts: bool = True, timeout_ms: int = 15_000, width: int | None = None) -> Visit:
        ctx = browser.new_context(**({"viewport": {"width": width, "height": 900}} if width else {}))
        contexts.append(ctx)
        page = ctx.new_page()
        visit = Visit(page=page, url=site_url + path.lstrip("/"))

        def route(r) -> None:
            host = urlparse(r.request.url).hostname
            if r.request.url.startswith(("data:", "blob:", "about:")) or host in LOCAL_HOSTS:
                r.continue_()
            else:
                visit.external_requests.append(r.request.url)
                r.abort()

        page.route("**/*", route)
        page.on("console", lambda m: m.type == "error" and visit.console_errors.append(m.text))
        page.on("pageerror", lambda e: visit.page_errors.append(str(e)))
        page.on("response", lambda r: r.status >= 400 and visit.failed_responses.append(f"{r.status} {r.url}"))
        page.goto(visit.url, wait_until="load", timeout=timeout_ms)
        if wait_for_charts:
            wait_for_charts_drawn(page, timeout_ms)
        return visit

    yield _open
    for ctx in contexts:
        ctx.close()


CHART_SELECTOR = ".ab-chart"


def wait_for_charts_drawn(page, timeout_ms: int = 15_000) -> None:
    """Wait until every chart div on the page is drawn in the rendering it keeps for the window's width (its
    ``data-drawn``: the renderer draws the wide one, then the phone one where the wide does not fit), or says
    why it is not (a missing chart library)."""
    page.wait_for_function(
        """sel => Array.from(document.querySelectorAll(sel)).every(
               el => el.dataset.drawn !== undefined ||
                     (el.querySelector('svg, canvas') === null && el.textContent.trim().length > 0))""",
        arg=CHART_SELECTOR, timeout=timeout_ms)


def book_pages(html_dir: Path) -> list[str]:
    """Every page of the book proper (relative paths), from the built HTML folder."""
    pages = sorted(str(p.relative_to(html_dir)) for p in html_dir.rglob("*.html")
                   if not p.name.startswith("_") and "_static" not in p.parts and "_sources" not in p.parts)
    return pages
