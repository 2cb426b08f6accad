import os, sys, time
def cuda_maps():
    return "libcuda.so" in open("/proc/self/maps").read()
def child_can_use_gpu():
    pid = os.fork()
    if pid == 0:
        try:
            import torch
            if torch.cuda._is_in_bad_fork(): os._exit(3)
            torch.cuda.init(); x = torch.ones(1, device="cuda") + 1; torch.cuda.synchronize(); os._exit(0)
        except Exception as e:
            print("child error:", repr(e)[:300], flush=True); os._exit(4)
    _, st = os.waitpid(pid, 0); return os.waitstatus_to_exitcode(st)
t=time.time()
steps = [("torch", "import torch"), ("worker", "import academic_bench.measure.worker"), ("deepspeed", "import deepspeed"),
         ("fsdp", "import torch.distributed.fsdp"), ("modeling_utils", "import transformers.modeling_utils"),
         ("gpt_neox", "import transformers.models.gpt_neox.modeling_gpt_neox"),
         ("meta build", "from academic_bench.catalog.models import get_model\nwith torch.device('meta'): get_model('pythia-1b').build(False)"),
         ("cpu adam", "from academic_bench.measure import preload; preload.load_cpu_adam()"),
         ("torchao", "import torchao.float8"), ("liger", "import liger_kernel.transformers")]
for name, code in steps:
    exec(code)
    print(f"{name}: child exit {child_can_use_gpu()}, {time.time()-t:.1f} s", flush=True)
