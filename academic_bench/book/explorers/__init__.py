"""Explorers of cost and training time: Altair charts for the book, ipywidgets for live notebooks.

The book's explorers are Altair charts whose controls are bound parameters: the data table is computed here in
Python (days, prices, MFU per setup) and the arithmetic that depends on a control runs in the browser as Vega
expressions, so they work with no kernel and no network. Each has a line of text that states its computed
answer, which the browser tests read back and compare with the same answer computed by ``cost``/``answer``.

The live explorers (``cost_explorer()``, ``plan_explorer()``) are ipywidgets around the same Python functions,
for JupyterLab, Voila and workshops; they need a running kernel.

| module | holds |
| --- | --- |
| ``common`` | the setups table (with each setup's implied MFU), bound controls, the answer line |
| ``budget`` | the budget explorer (every machine at today's dated prices or the paper's 2024 quotes), the cost explorer, their answers computed in Python |
| ``planner`` | the planner: days for a decoder of any size |
| ``answer_grid`` | every model x GPU x count: days, what they rest on (measured, predicted, the paper's), cost |
| ``live`` | the ipywidgets explorers |
"""
from __future__ import annotations

from .answer_grid import GRID_COLUMNS, GRID_LABELS, answer_grid_chart, answer_grid_frame  # noqa: F401
from .budget import (COST_SLIDERS, PRICE_KINDS, budget_answer, budget_chart, budget_setups,  # noqa: F401
                     cost_answer, cost_chart, deadline_answer)
from .common import (DEFAULT_MODEL, SOURCE_KINDS, assumptions_table, cloud_prices_table,  # noqa: F401
                     explorer_setups)
from .live import CostExplorer, PlanExplorer, cost_explorer, plan_explorer  # noqa: F401
from .planner import PLAN_PARAMS_B, plan_answer, plan_chart, plan_grid  # noqa: F401
