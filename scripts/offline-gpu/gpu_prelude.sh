# Source at the start of every device command: wheels, env, machine facts.
# The machine's copy of .git can lag the working tree it receives, so rows would name a stale commit (run 9).
[ -n "${ACADEMIC_BENCH_GIT_COMMIT:-}" ] || echo "warning: ACADEMIC_BENCH_GIT_COMMIT is not exported; rows will name the commit of the machine's .git copy, which can lag the working tree"
[ -d /tmp/site-mamba ] && MAMBA_SITE=/tmp/site-mamba  # install_mamba.sh's kernels, from an earlier call
# Installed once per machine and set of wheels: `pip install --target` replaces every file, and DeepSpeed's CPU Adam
# sources with fresh times make ninja compile the op again in the next offloaded configuration (a second
# install-and-build on one H200 machine took as long as the first: h200x1/evidence/engine-profile/).
wheels_id=$(ls .whl | md5sum | cut -c1-32)
if [ "$(cat /tmp/site/.wheels 2>/dev/null)" != "$wheels_id" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    >/dev/null 2>&1 && echo "$wheels_id" > /tmp/site/.wheels || echo "wheel install failed"
  # Bytecode, as a plain `pip install` leaves it: these machines ship torch without it and do not write it back,
  # so every process compiled the sources of torch, transformers, DeepSpeed and the rest again at import (about
  # 10 s a worker: h200x1/evidence/engine-profile/, engine-cost/imports.txt).
  bc_t0=$SECONDS; torch_site=$(python3 -c "import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))")
  python3 -m compileall -q -j 0 /tmp/site "$torch_site" >/dev/null 2>&1
  echo "bytecode of the wheels and of $torch_site compiled in $((SECONDS - bc_t0)) s" > /tmp/site/.bytecode
fi
export PYTHONPATH=/tmp/site${MAMBA_SITE:+:$MAMBA_SITE}:$PWD PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
# NVLink multicast cannot be used on these shared GPUs: the launcher switches it off for its workers too.
export ACADEMIC_BENCH_NO_NVLS=1
# One compile cache for every configuration of the job, under /tmp (which outlives each remote command).
export ACADEMIC_BENCH_COMPILE_CACHE=${ACADEMIC_BENCH_COMPILE_CACHE:-/tmp/academic-bench-compile-cache}
MACHINE_TXT=${MACHINE_TXT:-$OUT/machine.txt}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > $MACHINE_TXT 2>&1
python3 -c "import torch, transformers, timm, deepspeed; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'tf', transformers.__version__, 'timm', timm.__version__, 'ds', deepspeed.__version__, 'gpus', torch.cuda.device_count())" >> $MACHINE_TXT 2>&1
python3 -c "import mamba_ssm, causal_conv1d, selective_scan_cuda; print('mamba_ssm', mamba_ssm.__version__, 'causal_conv1d', causal_conv1d.__version__)" >> $MACHINE_TXT 2>/dev/null || echo "mamba-ssm kernels not importable (Mamba rows will say unsupported)" >> $MACHINE_TXT
python3 -c "import importlib.metadata as m; print('liger-kernel', m.version('liger-kernel'), 'torchao', m.version('torchao'))" >> $MACHINE_TXT 2>/dev/null || echo "liger-kernel or torchao not installed (fused-ce and fp8 rows will say unsupported)" >> $MACHINE_TXT
# DeepSpeed compiles its CPU Adam op with ninja the first time a machine builds an offloaded optimizer, which takes
# tens of seconds (h200x1/evidence/engine-profile/): built here, once per machine, it is not charged to whichever
# configuration happens to run first. Later loads find the build in the torch extensions cache.
ds_t0=$SECONDS; python3 -c "from deepspeed.ops.op_builder import CPUAdamBuilder; CPUAdamBuilder().load()" >/dev/null 2>&1 \
  && echo "deepspeed cpu_adam built or loaded in $((SECONDS - ds_t0)) s" >> $MACHINE_TXT \
  || echo "deepspeed cpu_adam could not be built (the first offloaded configuration will try)" >> $MACHINE_TXT
cat /tmp/site/.bytecode >> $MACHINE_TXT 2>/dev/null
awk '/MemTotal/ {printf "host memory %.1f GiB, %d CPUs\n", $2 / 1048576, cpus}' cpus=$(nproc) /proc/meminfo >> $MACHINE_TXT
cat $MACHINE_TXT
