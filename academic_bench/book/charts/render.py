"""The offline renderer: Altair charts drawn with a local vega bundle, no CDN.

Altair's default HTML output loads vega, vega-lite and vega-embed from public CDNs, so an offline book
would show "Error loading script" in place of every chart. ``enable_offline()`` registers a renderer that
emits a plain div plus a script calling ``window.vegaEmbed``; the library itself is one local file
(``vendor_bundle``) that the book serves from its own static folder (``academic_bench.book.build``).
Charts stay interactive (tooltips, bound sliders and menus) with no kernel and no network.

Every chart gets the book's shared configuration (``BOOK_CONFIG``): legends below the plot with labels never
cut, so a chart's width is its plot's and a page's column holds it. Where the column is narrower than a chart (a
phone), the chart is drawn again for the phone (``narrow``) instead of being scaled down.
"""
from __future__ import annotations

import hashlib
import itertools
import json
from pathlib import Path
from typing import Any

import altair as alt

from .narrow import split_narrow

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
    """The renderer Altair calls: ``chart_html`` as a notebook output."""
    return {"text/html": chart_html(spec)}


def specs_line(wide: dict, narrow: dict) -> str:
    """The line of a chart's script that holds both renderings' specs (``run_pages.redraw_saved_charts`` reads
    and rewrites it in saved notebooks). A "</script>" inside a label must not end the script."""
    blobs = (json.dumps(s, sort_keys=True, allow_nan=False).replace("</", "<\\/") for s in (wide, narrow))
    return "  var specs = {{wide: {}, narrow: {}}};".format(*blobs)


def chart_html(spec: dict) -> str:
    """A div and a script that draws ``spec`` with the locally served vega-embed: the wide rendering where it fits
    the column, else the narrow one drawn for a phone (``narrow``), switched again when the window is resized.
    The div's ``data-drawn`` names the rendering once it is drawn (the browser tests wait for it)."""
    wide, narrow = (with_book_config(s) for s in split_narrow(spec))
    # The data both renderings share is written once (vega-lite names a dataset by a hash of its rows).
    shared = wide.get("datasets") or {}
    narrow["datasets"] = {k: v for k, v in (narrow.get("datasets") or {}).items() if shared.get(k) != v}
    # A missing value is JSON's null: pandas' NaN would reach the page as the word NaN (a tooltip, a label).
    wide, narrow = (json.loads(json.dumps(s), parse_constant=lambda _: None) for s in (wide, narrow))
    blob = json.dumps(wide, sort_keys=True, allow_nan=False)
    div = f"ab-chart-{next(_counter)}-{hashlib.sha1(blob.encode()).hexdigest()[:10]}"
    html = f"""<div id="{div}" class="{CHART_CLASS}"></div>
<script type="text/javascript">
(function () {{
{specs_line(wide, narrow)}
  specs.narrow.datasets = Object.assign({{}}, specs.wide.datasets || {{}}, specs.narrow.datasets);
  var el, shown = null, view = null, wideWidth = null, pending = null;
  // The wide rendering's own width, once drawn: below it the column cannot hold it.
  function fits() {{ return wideWidth === null || el.clientWidth + 1 >= wideWidth; }}
  function draw(layout) {{
    shown = layout;
    if (view) {{ view.finalize(); view = null; }}
    delete el.dataset.drawn;
    return window.vegaEmbed(el, specs[layout], {{actions: false, renderer: "svg"}}).then(function (result) {{
      view = result.view;
      if (layout === "wide") {{
        var svg = el.querySelector("svg");
        wideWidth = svg ? parseFloat(svg.getAttribute("width")) : null;
        if (!fits()) {{ return draw("narrow"); }}
      }}
      el.dataset.drawn = layout;
    }}).catch(function (err) {{
      el.textContent = "Chart error: " + err;
      el.dataset.drawn = "error";
      console.error(err);
    }});
  }}
  function start() {{
    el = document.getElementById("{div}");
    if (!window.vegaEmbed) {{
      el.textContent = "The chart library is missing: build the book with `make book`.";
      console.error("vegaEmbed is not loaded");
      return;
    }}
    draw("wide");
    window.addEventListener("resize", function () {{
      clearTimeout(pending);
      pending = setTimeout(function () {{
        var want = fits() ? "wide" : "narrow";
        if (el.dataset.drawn && want !== shown) {{ draw(want); }}
      }}, 100);
    }});
  }}
  if (document.readyState === "loading") {{ document.addEventListener("DOMContentLoaded", start); }}
  else {{ start(); }}
}})();
</script>"""
    return html


def enable_offline() -> None:
    """Make every Altair chart displayed from now on render with the local vega bundle (no CDN)."""
    if RENDERER not in alt.renderers.names():
        alt.renderers.register(RENDERER, _html)
    alt.renderers.enable(RENDERER)


