"""Build the book (``make book`` runs ``python -m academic_bench.book.build``) and vendor its chart library.

Two roles in one small module:

* ``main()`` runs ``jupyter-book build . -W -n --keep-going`` at the repository root (warnings are errors,
  a failing notebook cell fails the build), checks that no page loads anything from another host, and prints
  the page to open and how long the build took.
* ``setup(app)`` is a Sphinx extension (listed in ``_config.yml``) that
  - writes the vega bundle into a ``_vendor`` folder beside the HTML output and serves it on every page (not
    a root ``_static/`` folder: Jupyter Book adds every script found there to every page in no useful order);
  - re-executes every page when the code, data or shipped runs they read have changed (Jupyter's cache keys
    a page on its own code only), and shares slow derived tables between pages (``analysis.CACHE_ENV``);
  - drops sphinx-thebe's scripts, which the book does not use.
"""
from __future__ import annotations

import argparse
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from ..catalog.env import REPO_ROOT as ROOT

VENDOR = "_vendor"
BOOK_ASSETS = ROOT / "book" / "_assets"  # the book's own stylesheet (shipped, not generated)
STYLESHEET = "academic-bench.css"

# <script src=...>, <link href=...>, <img src=...>, <iframe src=...>, CSS url(...): anything a browser fetches.
_ASSET = re.compile(
    r"""<(?:script|img|iframe|source|audio|video)\b[^>]*\bsrc\s*=\s*["']([^"']+)["']"""
    r"""|<link\b[^>]*\bhref\s*=\s*["']([^"']+)["']"""
    r"""|url\(\s*["']?((?:https?:)?//[^"')]+)""", re.I)


# What the pages read besides their own text. Jupyter's cache keys a page on its code cells only, so a new
# result file or a changed module would otherwise leave stale numbers in cached pages.
INPUTS = ("academic_bench/**/*.py", "academic_bench/data/*", "notebooks/runs/**/*", "notebooks/workshop/*",
          "tests/fixtures/*", "pyproject.toml")
FINGERPRINT = ".inputs-fingerprint"


# --- the Sphinx extension ----------------------------------------------------------------------------------

def inputs_fingerprint(root: Path = ROOT) -> str:
    """A hash of every file the pages read (code, data, shipped runs, fixtures)."""
    h = hashlib.sha256()
    for pattern in INPUTS:
        for path in sorted(p for p in root.glob(pattern) if p.is_file() and "__pycache__" not in p.parts):
            h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def _check_inputs(app, config) -> None:  # noqa: ANN001
    """When the inputs changed since the last build, drop the notebook cache and re-read every page."""
    from ..analysis import CACHE_ENV

    build_dir = Path(app.outdir).parent
    os.environ[CACHE_ENV] = str(build_dir / ".derived")  # page kernels inherit it (analysis.model_facts)
    stamp = build_dir / FINGERPRINT
    app.ab_fingerprint = inputs_fingerprint()
    previous = stamp.read_text().strip() if stamp.exists() else None
    stamp.unlink(missing_ok=True)  # written back only by a build that ends with no warning
    app.ab_inputs_changed = previous != app.ab_fingerprint
    if app.ab_inputs_changed:
        cache = Path(config.nb_execution_cache_path or build_dir / ".jupyter_cache")
        if cache.exists():
            shutil.rmtree(cache)


def _reread_all(app, env, added, changed, removed) -> list[str]:  # noqa: ANN001
    if not getattr(app, "ab_inputs_changed", False):
        return []
    return sorted(set(env.found_docs) - set(added) - set(changed) - set(removed))


def _save_fingerprint(app, exception) -> None:  # noqa: ANN001
    # A build with warnings leaves no stamp, so the next one re-reads every page and shows them again.
    if exception is None and getattr(app, "ab_fingerprint", None) and not getattr(app, "_warncount", 0):
        (Path(app.outdir).parent / FINGERPRINT).write_text(app.ab_fingerprint + "\n")


def _vendor(app, config) -> None:  # noqa: ANN001 (Sphinx objects)
    from .charts import BUNDLE_NAME, vendor_bundle

    folder = Path(app.outdir).parent / VENDOR  # e.g. _build/_vendor, beside _build/html
    vendor_bundle(folder)
    for path in (folder, BOOK_ASSETS):
        if str(path) not in config.html_static_path:
            config.html_static_path.append(str(path))
    app.add_js_file(BUNDLE_NAME)
    app.add_css_file(STYLESHEET)


def _drop_thebe(app, pagename, templatename, context, doctree) -> None:  # noqa: ANN001
    """Remove sphinx-thebe's scripts: the book has no launch buttons, and Jupyter Book registers them twice
    (a duplicate ``const THEBE_JS_URL`` is a page error) with a CDN address for a library never used here."""
    context["script_files"] = [js for js in context.get("script_files", []) if not _is_thebe(js)]


def _is_thebe(js) -> bool:  # noqa: ANN001 (sphinx.builders.html._assets._JavaScript)
    body = getattr(js, "attributes", {}).get("body", "")
    return "sphinx-thebe" in str(getattr(js, "filename", js)) or "THEBE_JS_URL" in body


def setup(app) -> dict:  # noqa: ANN001
    app.connect("config-inited", _vendor)
    app.connect("config-inited", _check_inputs)
    app.connect("env-get-outdated", _reread_all)
    app.connect("build-finished", _save_fingerprint)
    app.connect("html-page-context", _drop_thebe)
    from .run_pages import on_doctree, on_page

    app.connect("html-page-context", on_page)
    app.connect("doctree-read", on_doctree, priority=400)  # before Sphinx's title collector (500)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}


# --- checks on the built site ------------------------------------------------------------------------------

def external_assets(html_dir: str | Path) -> dict[str, list[str]]:
    """Per page, the scripts, styles, images or frames it would fetch from another host (should be none).

    Links a reader clicks (``<a href>``) are fine; only what loads by itself counts.
    """
    found: dict[str, list[str]] = {}
    for page in sorted(Path(html_dir).rglob("*.html")):
        urls = [u for m in _ASSET.finditer(page.read_text(errors="replace")) for u in m.groups() if u]
        remote = sorted({u for u in urls if u.startswith(("http://", "https://", "//"))})
        if remote:
            found[str(page.relative_to(html_dir))] = remote
    return found


# --- the build ---------------------------------------------------------------------------------------------

def _jupyter_book() -> str:
    exe = Path(sys.executable).with_name("jupyter-book")
    found = str(exe) if exe.exists() else shutil.which("jupyter-book")
    if not found:
        raise SystemExit("jupyter-book is not installed: run `make install` (it installs the '.[book]' extra)")
    return found


def build_env(root: Path = ROOT, base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of the build: ``root`` first on PYTHONPATH, so the page kernels import the package from the
    checkout being built, not from wherever it is installed (an editable install of another checkout)."""
    env = dict(os.environ if base is None else base)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), env.get("PYTHONPATH")) if p)
    return env


@contextmanager
def _lock(out: Path) -> Iterator[None]:
    """One build at a time per output folder (tests and `make book` may run together)."""
    out.mkdir(parents=True, exist_ok=True)
    with open(out / ".build.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def build(path_output: str | Path | None = None, fresh: bool = False, quiet: bool = False) -> Path:
    """Build the book; return the HTML folder. Raises ``RuntimeError`` with the log tail when it fails."""
    out = Path(path_output).resolve() if path_output else ROOT
    build_dir = out / "_build"
    with _lock(build_dir):
        if fresh and build_dir.exists():
            for child in build_dir.iterdir():
                if child.name != ".build.lock":
                    shutil.rmtree(child) if child.is_dir() else child.unlink()
        cmd = [_jupyter_book(), "build", str(ROOT), "-W", "-n", "--keep-going"]
        if path_output:
            cmd += ["--path-output", str(out)]
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=quiet, text=True, env=build_env())
        if proc.returncode != 0:
            tail = "" if not quiet else "\n".join((proc.stdout + proc.stderr).splitlines()[-60:])
            raise RuntimeError(f"the book build failed (exit {proc.returncode}); command: {' '.join(cmd)}\n{tail}")
    html = build_dir / "html"
    remote = external_assets(html)
    if remote:
        lines = "\n".join(f"  {page}: {', '.join(urls)}" for page, urls in remote.items())
        raise RuntimeError(f"pages load assets from other hosts (the book must work offline):\n{lines}")
    return html


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m academic_bench.book.build", description=__doc__.splitlines()[0])
    p.add_argument("--path-output", help="build into this folder's _build/ instead of the repository's")
    p.add_argument("--fresh", action="store_true", help="delete the previous build and notebook cache first")
    args = p.parse_args(argv)
    start = time.perf_counter()
    from ..answer import published_ranges, store
    from ..estimate import kept

    if not kept.shipped_is_current():  # the catalog models' meta-device facts follow the model files
        print(f"Model facts computed again: {kept.write_shipped()}")
    if not store.shipped_is_current():  # the study's answers, kept beside the runs, follow the runs they come from
        print(f"Answers computed again from the runs: {published_ranges.write_shipped()}")
    try:
        html = build(args.path_output, fresh=args.fresh)
    except RuntimeError as exc:
        print(f"make book: {exc}", file=sys.stderr)
        return 1
    print(f"\nBook built in {time.perf_counter() - start:.1f} s. Open: {html / 'index.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
