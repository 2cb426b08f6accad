"""The offline renderer: Altair charts drawn with a local vega bundle, no CDN.

Altair's default HTML output loads vega, vega-lite and vega-embed from public CDNs, so an offline book
would show "Error loading script" in place of every chart. ``enable_offline()`` registers a renderer that
emits a plain div plus a script calling ``window.vegaEmbed``; the library itself is one local file
(``vendor_bundle``) that the book serves from its own static folder (``academic_bench.book.build``).
Charts stay interactive (tooltips, bound sliders and menus) with no kernel and no network.

Every chart gets the book's shared configuration (``BOOK_CONFIG``): legends below the plot with labels never
cut, so a chart's width is its plot's and a page's column holds it. The stylesheet scales a chart's SVG down to
its column on a narrow screen.
"""
from __future__ import annotations

import hashlib
import itertools
import json
from pathlib import Path
from typing import Any

import altair as alt

BUNDLE_NAME = "vega-bundle.js"
RENDERER = "academic-bench-offline"
CHART_CLASS = "ab-chart"  # every chart div carries it; the browser tests look for it

_counter = itertools.count()


# --- the offline renderer ---------------------------------------------------------------------------------

def vendor_bundle(folder: str | Path) -> Path:
    """Write vega + vega-lite + vega-embed (matched to the installed Altair) into ``folder``.

    The bundle is wrapped in a function scope because its top-level ``const _`` clashes with Sphinx's
    global ``_``; it publishes ``window.vegaEmbed`` itself. The file is rewritten only when it changes.
    """
    import vl_convert

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    text = "(function(){\n" + vl_convert.javascript_bundle() + "\n})();\n"
    path = folder / BUNDLE_NAME
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    return path


# Legends below the plot, their labels never cut (vega cuts at 160 px by default, "ours (h2..."), wrapped in
# columns; and no chart-wide padding that would push it past its column.
BOOK_CONFIG = {"legend": {"orient": "bottom", "labelLimit": 1000, "titleLimit": 1000, "columns": 3},
               "axis": {"labelLimit": 320}}


def with_book_config(spec: dict) -> dict:
    """``spec`` with the book's shared configuration under what the chart sets itself."""
    spec = dict(spec)
    config = dict(spec.get("config") or {})
    for key, defaults in BOOK_CONFIG.items():
        config[key] = {**defaults, **(config.get(key) or {})}
    spec["config"] = config
    return spec


def _html(spec: dict, **_: Any) -> dict[str, str]:
    """A div and a script that draws ``spec`` with the locally served vega-embed."""
    blob = json.dumps(with_book_config(spec), sort_keys=True)
    div = f"ab-chart-{next(_counter)}-{hashlib.sha1(blob.encode()).hexdigest()[:10]}"
    safe = blob.replace("</", "<\\/")  # a "</script>" inside a label must not end the script
    html = f"""<div id="{div}" class="{CHART_CLASS}"></div>
<script type="text/javascript">
(function () {{
  var spec = {safe};
  function draw() {{
    var el = document.getElementById("{div}");
    if (!window.vegaEmbed) {{
      el.textContent = "The chart library is missing: build the book with `make book`.";
      console.error("vegaEmbed is not loaded");
      return;
    }}
    window.vegaEmbed(el, spec, {{actions: false, renderer: "svg"}}).catch(function (err) {{
      el.textContent = "Chart error: " + err;
      console.error(err);
    }});
  }}
  if (document.readyState === "loading") {{ document.addEventListener("DOMContentLoaded", draw); }}
  else {{ draw(); }}
}})();
</script>"""
    return {"text/html": html}


def enable_offline() -> None:
    """Make every Altair chart displayed from now on render with the local vega bundle (no CDN)."""
    if RENDERER not in alt.renderers.names():
        alt.renderers.register(RENDERER, _html)
    alt.renderers.enable(RENDERER)


