"""Live explorers (ipywidgets) for JupyterLab, Voila and workshops: they need a running kernel."""
from __future__ import annotations

from typing import Any

from ...analysis import gpu_label, model_label
from ...answer import answer
from ...answer.planner import plan_decoder
from ...cost import GPU_COUNTS, Assumptions, cost_of, setup_label
from .common import DEFAULT_MODEL


# --- live explorers (ipywidgets) ----------------------------------------------------------------------------

def _model_menu() -> list[tuple[str, str]]:
    """(display label, key) of every catalog model, in catalog order: a menu shows labels, its value is the key."""
    from ...catalog.models import CATALOG, model_rank  # the catalog loads torch: only when a menu is built

    return [(model_label(k), k) for k in sorted(CATALOG, key=model_rank)]


def _gpu_menu(bf16: bool = False) -> list[tuple[str, str]]:
    """(display name, key) of every NVIDIA GPU of data/gpus.csv (another vendor's is refused by the answer, with
    the reason: ``estimate`` says it), the study's first; ``bf16``: only those with bf16 tensor cores (the
    planner's decoders train in bf16)."""
    from ...catalog.hardware import every_gpu

    return [(gpu_label(k), k) for k, g in every_gpu().items()
            if g.vendor == "nvidia" and (g.supports_bf16 or not bf16)]


def _listed(price, gpu: str) -> float:
    """A listed price for a widget's default, 0 where none is listed (the reader enters one)."""
    try:
        return price(gpu)
    except ValueError:
        return 0.0


class CostExplorer:
    """Dropdowns and sliders around the study's answer (``answer.answer``) and ``cost.cost_of``; ``answer`` holds
    the last answer, ``result`` its ``Cost`` (None without an answer), ``output`` the text."""

    def __init__(self, model: str = DEFAULT_MODEL, gpu: str = "h100-80gb", n_gpus: int = 4,
                 root: str | None = None) -> None:
        import ipywidgets as w

        self._root = root
        a = Assumptions()
        self.model = w.Dropdown(options=_model_menu(), value=model, description="Model")
        self.gpu = w.Dropdown(options=_gpu_menu(), value=gpu, description="GPU")
        self.n_gpus = w.Dropdown(options=list(GPU_COUNTS), value=n_gpus, description="GPUs")
        self.gpu_price = w.BoundedFloatText(value=_listed(a.gpu_price, gpu), min=0, max=1e7, step=100,
                                            description="GPU price $")
        self.cloud_price = w.BoundedFloatText(value=_listed(a.cloud_price, gpu), min=0, max=1e3, step=0.05,
                                              description="Cloud $/GPU-h")
        self.lifespan = w.FloatSlider(value=a.lifespan_years, min=0.5, max=10, step=0.5, description="Lifespan (y)")
        self.kwh = w.FloatSlider(value=a.kwh_price_usd, min=0, max=0.6, step=0.0001, readout_format=".4f",
                                 description="$/kWh")
        self.pue = w.FloatSlider(value=a.pue, min=1, max=2.5, step=0.01, description="PUE")
        self.output = w.HTML()
        self.result = None
        self.gpu.observe(self._gpu_changed, names="value")
        for c in (self.model, self.n_gpus, self.gpu_price, self.cloud_price, self.lifespan, self.kwh, self.pue):
            c.observe(self.update, names="value")
        self.widget = w.VBox([w.HBox([self.model, self.gpu, self.n_gpus]),
                              w.HBox([self.gpu_price, self.cloud_price]),
                              w.HBox([self.lifespan, self.kwh, self.pue]), self.output])
        self.update()

    def _gpu_changed(self, change: dict) -> None:
        a = Assumptions()
        with self.gpu_price.hold_trait_notifications(), self.cloud_price.hold_trait_notifications():
            self.gpu_price.value = _listed(a.gpu_price, change["new"])
            self.cloud_price.value = _listed(a.cloud_price, change["new"])
        self.update()

    def update(self, *_: Any) -> None:
        model, gpu, n = self.model.value, self.gpu.value, int(self.n_gpus.value)
        try:
            ans = answer(model, gpu, n, self._root)
        except ValueError as e:  # a recipe the GPU cannot run (bf16 before Ampere): the reason, as estimate gives it
            self.answer, self.result = None, None
            self.output.value = f"<b>{model_label(model)} on {setup_label(gpu, n)}</b>: refused: {e}"
            return
        self.answer = ans
        if not ans.answered:
            self.result = None
            self.output.value = f"<b>{model_label(model)} on {setup_label(gpu, n)}</b>: {ans.headline()}"
            return
        a = Assumptions(lifespan_years=self.lifespan.value, kwh_price_usd=self.kwh.value, pue=self.pue.value,
                        gpu_price_usd={gpu: self.gpu_price.value},
                        cloud_usd_per_gpu_hour={gpu: self.cloud_price.value})
        c = cost_of(gpu, n, ans.days, a, ans.kind, model)
        self.result = c
        settings = f"<br>settings: {ans.settings.words()}" if ans.settings else ""
        self.output.value = (
            f"<b>{model_label(model)} on {setup_label(gpu, n)}: {ans.headline()}</b>{settings}<br>"
            f"purchase ${c.purchase_usd:,.0f} &middot; per run ${c.per_experiment_usd:,.0f} + energy "
            f"${c.energy_usd:,.0f} = <b>owned ${c.owned_per_experiment_usd:,.0f}</b> &middot; "
            f"<b>rented ${c.cloud_usd:,.0f}</b>")

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)


class PlanExplorer:
    """Sliders around ``answer.planner.plan_decoder``; ``result`` holds the last ``Plan``, ``output`` its text."""

    def __init__(self, params: float = 1e9, tokens: float = 3e12, gpu: str = "h100-80gb", n_gpus: int = 8,
                 seq_len: int = 2048, root: str | None = None) -> None:
        import ipywidgets as w

        self._root = root
        self.params = w.FloatLogSlider(value=params, base=10, min=7, max=11, step=0.01, description="Parameters",
                                       readout_format=".3s")
        self.tokens = w.FloatLogSlider(value=tokens, base=10, min=9, max=13.5, step=0.01, description="Tokens",
                                       readout_format=".3s")
        self.seq_len = w.Dropdown(options=[512, 1024, 2048, 4096, 8192], value=seq_len, description="Seq len")
        self.gpu = w.Dropdown(options=_gpu_menu(bf16=True), value=gpu, description="GPU")
        self.n_gpus = w.Dropdown(options=list(GPU_COUNTS), value=n_gpus, description="GPUs")
        self.output = w.HTML()
        self.result = None
        for c in (self.params, self.tokens, self.seq_len, self.gpu, self.n_gpus):
            c.observe(self.update, names="value")
        self.widget = w.VBox([w.HBox([self.params, self.tokens]), w.HBox([self.seq_len, self.gpu, self.n_gpus]),
                              self.output])
        self.update()

    def update(self, *_: Any) -> None:
        p = plan_decoder(self.params.value, self.tokens.value, self.gpu.value, int(self.n_gpus.value),
                         int(self.seq_len.value), root=self._root)
        self.result = p
        head = f"{p.params / 1e9:.3g}B parameters, {p.tokens / 1e9:,.0f}B tokens on {setup_label(p.gpu, p.n_gpus)}"
        if p.days is None:
            self.output.value = f"<b>{head}</b>: {p.note}"
        else:
            self.output.value = (f"<b>{head}: {p.days:,.1f} days</b> (range {p.days_low:,.1f}-{p.days_high:,.1f}; "
                                 f"at 100% of peak {p.days_at_peak:,.1f})<br>{p.note}")

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)


def cost_explorer(**kwargs: Any) -> CostExplorer:
    """A live cost explorer (needs a kernel): ``cost_explorer(model='pythia-1b', gpu='h100-80gb', n_gpus=4)``."""
    return CostExplorer(**kwargs)


def plan_explorer(**kwargs: Any) -> PlanExplorer:
    """A live planner (needs a kernel): ``plan_explorer(params=1e9, tokens=3e12, gpu='h100-80gb', n_gpus=8)``."""
    return PlanExplorer(**kwargs)
