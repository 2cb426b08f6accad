"""Where importing a worker's libraries first asks CUDA about the GPU, which leaves every process forked afterwards
unable to use it (torch marks such a fork as bad): each import in turn, in one process, as the preloading process
runs them (PYTORCH_NVML_BASED_CUDA_CHECK=1), with torch.cuda's lazy initialization wrapped to keep the stack of
its first call.
    PYTORCH_NVML_BASED_CUDA_CHECK=1 python3 cuda_init.py"""
import importlib
import time
import traceback

import torch

first: list[traceback.StackSummary] = []
initialize = torch.cuda._lazy_init


def lazy_init_seen() -> None:
    if not first and not torch.cuda.is_initialized():
        first.append(traceback.extract_stack()[:-1])
    initialize()


torch.cuda._lazy_init = lazy_init_seen  # looked up by name: torch.cuda's functions and the C++ side call it so
for name in ("academic_bench.measure.worker", "deepspeed", "torch.distributed.fsdp", "transformers.modeling_utils",
             "transformers.models.gpt_neox.modeling_gpt_neox", "torchao", "liger_kernel.transformers"):
    t = time.time()
    try:
        importlib.import_module(name)
        done = "imported"
    except Exception as exc:  # noqa: BLE001
        done = f"failed ({exc!r:.120})"
    print(f"{name}: {done} in {time.time() - t:.1f} s; CUDA initialized: {torch.cuda.is_initialized()}", flush=True)
    if first:
        print("first initialization of CUDA, from:")
        for frame in first[0]:
            if "importlib" not in frame.filename:
                print(f"  {frame.filename.split('site-packages/')[-1]}:{frame.lineno} {frame.name}: {frame.line}")
        break
