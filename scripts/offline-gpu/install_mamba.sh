# The first device call of a Mamba run, carrying [".whl-mamba"] alone (the wheels and .whl/ together exceed
# what one call carries): install the kernels (and einops, which mamba-ssm imports) where the warm machine keeps
# them for the next calls, then run both kernels forward and backward on the GPU, so that a broken build fails
# here and not in the job. The GPU prelude puts /tmp/site-mamba on PYTHONPATH when it exists.
set -eu
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site-mamba \
  .whl-mamba/*.whl
ls /tmp/site-mamba
PYTHONPATH=/tmp/site-mamba python3 scripts/offline-gpu/mamba_smoke.py
