"""GPU smoke test: every method once on a small real model. Writes logs and results under $OUT."""
import json, os, subprocess, sys, time
from pathlib import Path
final = Path(os.environ.get("OUT", "/tmp/out")); out = Path("/tmp/work"); out.mkdir(exist_ok=True, parents=True)
M = lambda **kw: {"compile": False, "kernels": False, "tf32": False, "checkpointing": False, "sharding": "none", "offload": False, **kw}
FL = dict(compile=True, kernels=True, tf32=True)
jobs = [
 ("160m-naive", "pythia-160m", M(), 8, "synced", 0),
 ("160m-fl", "pythia-160m", M(**FL), 8, "synced", 2),
 ("160m-fl-unsynced", "pythia-160m", M(**FL), 8, "unsynced", 0),
 ("160m-fl-ckpt", "pythia-160m", M(**FL, checkpointing=True), 8, "synced", 0),
 ("160m-z1off", "pythia-160m", M(**FL, sharding="zero1", offload=True), 8, "synced", 0),
 ("160m-z3off", "pythia-160m", M(**FL, sharding="zero3", offload=True), 8, "synced", 0),
 ("160m-fsdpsgo-off", "pythia-160m", M(**FL, sharding="fsdp_shard_grad_op", offload=True), 8, "synced", 0),
 ("160m-fsdpfull-off", "pythia-160m", M(**FL, sharding="fsdp_full_shard", offload=True), 8, "synced", 0),
 ("1b-fl-search", "pythia-1b", M(**FL), None, "synced", 2),
 ("vit-fl", "vit-large", M(**FL), 64, "synced", 0),
 ("convnext-fl", "convnext-xlarge", M(**FL), 64, "synced", 0),
 ("roberta-fl", "roberta-large", M(**FL), 32, "synced", 0),
 ("mamba-fl", "mamba-2.8b", M(**FL), 1, "synced", 0),
]
only = sys.argv[1:]
summary = []
for name, model, methods, mbs, timing, val in jobs:
    if only and name not in only: continue
    req = {"config": {"model": model, "gpu": "h100-80gb", "n_gpus": 1, "nodes": 1, "methods": methods, "micro_batch": mbs, "tiny": False},
           "timing": timing, "validate_steps": val, "warmup": 2, "reps": 5, "device": "cuda"}
    rq, rs, lg = out / f"{name}.req.json", out / f"{name}.res.json", out / f"{name}.log"
    rq.write_text(json.dumps(req))
    t = time.time()
    with open(lg, "w") as f:
        try:
            p = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "1", "--standalone",
                                "-m", "academic_bench.measure.worker", "--request", str(rq), "--result", str(rs)],
                               stdout=f, stderr=subprocess.STDOUT, timeout=300)
            rc = p.returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
    res = json.loads(rs.read_text()) if rs.exists() else {}
    line = {"name": name, "rc": rc, "wall": round(time.time() - t, 1), "outcome": res.get("outcome"), "mbs": res.get("micro_batch"),
            "step": res.get("step_time_s"), "mfu": res.get("mfu"), "mem": res.get("peak_memory_gb"), "val": res.get("validate"),
            "reason": (res.get("reason") or "")[:200], "ran": res.get("ran")}
    summary.append(line); print(json.dumps(line), flush=True)
    subprocess.run(["tar", "czf", str(final / "smoke.tgz"), "-C", str(out), "."])
    if rc != 0 and not res:
        print(open(lg).read()[-2500:], flush=True)
(out / "summary.json").write_text(json.dumps(summary, indent=1))
