"""What a pre-training run costs: buying the machine, running it, or renting the GPUs instead.

| module | holds |
| --- | --- |
| ``model`` | the cost model: its assumptions with their sources, prices, purchase, energy, cloud, ``cost_of`` |
| ``setups`` | days per setup (ours, the paper's, analytic), their costs and plausibility, the budget questions |
| ``prices`` | dated purchase prices, the paper's 2024 quotes beside today's; a setup bought at either |

Every public name of ``model`` and ``setups`` is importable from here (``from academic_bench.cost import cost_of``).
"""
from __future__ import annotations

from .model import *  # noqa: F401,F403
from .model import __doc__ as _model_doc  # noqa: F401
from .model import check_non_negative, lookup_price  # noqa: F401
from .setups import *  # noqa: F401,F403
from .prices import (TODAY_FROM, Purchase, dated_prices, paper_purchase, today_card_prices,  # noqa: F401
                     today_purchase)
