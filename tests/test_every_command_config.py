"""Every command that answers takes a decoder's config.json as ``estimate`` does (``cost``, ``plan``, ``space``,
``export --best``), and the ``export --best --model NAME@DIGEST`` line ``estimate`` prints for it works in a later
command; decoders the study does not answer (Gemma-2's eager-only attention, Mamba and Mamba-2's state-space
layers) are refused with the study's reason and the nearest catalog model.

The decoder is a config.json of the study's evidence, copied into ``tmp_path``; Gemma-2 and Mamba configs are
transformers' own config classes' defaults."""
from __future__ import annotations

import json
import math
import shlex
import shutil
from pathlib import Path

import pytest

from academic_bench.catalog.models import from_config
from academic_bench.cli import main

ROOT = Path(__file__).resolve().parents[1]
EVIDENCE = ROOT / "notebooks/runs/h100x1/evidence/decoders/qwen2.5-0.5b/config.json"
GPU, N = "h100-80gb", 1
SIZE = ["--tokens", "1e10", "--seq-len", "2048"]


@pytest.fixture(autouse=True)
def _offline(monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def _run(capsys, *argv: str) -> tuple[int, dict]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, json.loads(out)


def _config(tmp_path: Path) -> str:
    folder = tmp_path / "qwen2.5-0.5b"
    folder.mkdir()
    shutil.copy(EVIDENCE, folder / "config.json")
    return str(folder / "config.json")


def _forget(monkeypatch, key: str) -> None:
    """As a new process: nothing registered under ``key`` but what the user's cache folder keeps."""
    for table in (from_config.REGISTERED, from_config.DECODERS, from_config.MADE_WITH):
        monkeypatch.delitem(table, key, raising=False)


def test_the_export_line_estimate_prints_for_a_config_json_works_in_a_later_command(tmp_path, capsys, monkeypatch):
    path = _config(tmp_path)
    rc, est = _run(capsys, "estimate", "--model", path, *SIZE, "--gpu", GPU, "--gpus", str(N), "--json")
    answer = est["answer"]
    assert rc == 0 and answer["kind"] == "predicted" and answer["settings"]["export_command"]
    argv = shlex.split(answer["settings"]["export_command"])[1:]
    argv[argv.index("--out") + 1] = str(tmp_path / "export")
    _forget(monkeypatch, answer["model"])
    rc, written = _run(capsys, *argv, "--json")
    assert rc == 0, written
    recipe = json.loads(Path(written["recipe.json"]).read_text())
    assert recipe["model"] == answer["model"] and recipe["answer"]["days"] == answer["days"]
    assert (recipe["micro_batch"], recipe["gas"]) == (answer["settings"]["micro_batch"], answer["settings"]["gas"])
    assert recipe["seq_len"] == 2048 and recipe["precision"] == "bf16"

    Path(path).write_text(json.dumps({**json.loads(Path(path).read_text()), "num_hidden_layers": 12}))
    _forget(monkeypatch, answer["model"])
    rc, refused = _run(capsys, *argv, "--json")  # the key names the file as it was read: a changed file is refused
    assert rc == 2 and "changed since" in refused["error"]


def test_cost_plan_space_and_export_take_a_config_json_and_give_estimate_s_answer(tmp_path, capsys):
    path = _config(tmp_path)
    setting = ["--gpu", GPU, "--gpus", str(N)]
    _, est = _run(capsys, "estimate", "--model", path, *SIZE, *setting, "--json")
    key = est["answer"]["model"]

    rc, cost = _run(capsys, "cost", "--model", path, *SIZE, *setting, "--json")
    assert rc == 0 and cost["answer"] == est["answer"] and cost["days"] == est["days"]
    rc, by_key = _run(capsys, "cost", "--model", key, *setting, "--json")
    assert rc == 0 and by_key["answer"] == est["answer"]

    rc, plan = _run(capsys, "plan", "--model", path, *SIZE, "--budget", "1e7", "--json")
    assert rc == 0 and plan["candidates"] and plan["answer"]["model"].startswith("qwen2.5-0.5b@")
    same = [c for c in plan["candidates"] if (c["gpu"], c["n_gpus"]) == (GPU, N)]
    assert same and same[0]["days"] == pytest.approx(est["days"])

    rc, space = _run(capsys, "space", "--model", path, *SIZE, *setting, "--json")
    assert rc == 0 and space["model"] == key and space["valid"]

    rc, written = _run(capsys, "export", "--best", "--model", path, *SIZE, *setting, "--out", str(tmp_path / "x"),
                       "--json")
    assert rc == 0 and json.loads(Path(written["recipe.json"]).read_text())["model"] == key


def test_a_name_at_digest_no_command_read_is_unknown_with_the_choices(capsys):
    rc, refused = _run(capsys, "export", "--best", "--model", "nothing@0123456789", "--gpu", GPU, "--gpus", "1",
                       "--out", "/tmp/never-written", "--json")
    assert rc == 2 and "unknown model" in refused["error"] and "pythia-1b" in refused["choices"]


def _defaults(tmp_path: Path, name: str) -> tuple[str, int]:
    """transformers' own config class's defaults as a config.json, and the parameters of the model it builds."""
    import torch
    import transformers

    cfg = getattr(transformers, name)()
    with torch.device("meta"):
        params = sum(p.numel() for p in transformers.AutoModelForCausalLM.from_config(cfg).parameters())
    folder = tmp_path / name
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(cfg.to_dict()))
    return str(folder / "config.json"), params


def _nearest(params: int, family: str) -> str:
    from academic_bench.catalog.models import CATALOG

    return min((m for m in CATALOG.values() if m.family == family),
               key=lambda m: abs(math.log(m.paper_params / params))).key


@pytest.mark.parametrize("name, family, says", [("Gemma2Config", "pythia", "SDPA"),
                                                ("Mamba2Config", "mamba", "state-space"),
                                                ("MambaConfig", "mamba", "state-space"),
                                                ("NemotronHConfig", "mamba", "state-space")])
@pytest.mark.parametrize("command", ["estimate", "cost", "export"])
def test_decoders_the_study_does_not_answer_are_refused_with_its_reason_and_the_nearest_catalog_model(
        tmp_path, capsys, name, family, says, command):
    path, params = _defaults(tmp_path, name)
    extra = ["--out", str(tmp_path / "x"), "--best"] if command == "export" else []
    rc, refused = _run(capsys, command, "--model", path, *SIZE, "--gpu", GPU, "--gpus", "1", *extra, "--json")
    assert rc == 2
    assert says in refused["error"] and f"--model {_nearest(params, family)} " in refused["error"]
    assert "attn_implementation" not in refused["error"] and "missing" not in refused["error"]
