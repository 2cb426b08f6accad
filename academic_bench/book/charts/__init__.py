"""Altair charts for the book and notebooks, the offline renderer that shows them without a CDN, and the book's
HTML tables. Every public name of the submodules is importable from here (``from academic_bench import charts``):

| module | holds |
| --- | --- |
| ``render`` | the offline renderer (``enable_offline``, ``vendor_bundle``) and the configuration every chart shares |
| ``narrow`` | each chart's rendering for a phone (``with_narrow``, ``narrow_spec``), drawn where the wide one does not fit |
| ``common`` | colours, one marker and colour per GPU, the catalog's model order, the empty chart |
| ``figures`` | the book's figures, chapter by chapter |
| ``concept`` | illustrations that are not measurements (the unsynchronised clock) |
| ``labels`` | what a cell of ours may claim: optimised only where its search is complete; one MFU basis |
| ``tables`` | HTML tables (no index, no NaN), the paper's Table 1 grid, ``count`` and ``glue`` |
"""
from __future__ import annotations

from .common import (SOURCE_COLORS, empty_chart, by_model, gpu_color, gpu_names, gpu_shape, model_list,  # noqa: F401
                     model_order)
from .concept import clock_illustration, clock_illustration_frame  # noqa: F401
from .labels import (OPTIMISED, clock_ratio_summary, dense16_peak, on_dense16, optimised_runs, peak_name, search_status,  # noqa: F401
                     unoptimised, unoptimised_note)
from .figures import *  # noqa: F401,F403
from .figures import settings_order  # noqa: F401  (the setting labels in model order)
from .narrow import NARROW_COLUMN, narrow_spec, with_narrow, wrap_expression  # noqa: F401
from .render import (BOOK_CONFIG, BUNDLE_NAME, CHART_CLASS, RENDERER, chart_html, enable_offline,  # noqa: F401
                     specs_line, vendor_bundle, with_book_config)
from .tables import NO_VALUE, count, glue, grid_html, table  # noqa: F401
