# The first device call of a Mamba session, carrying [".whl-mamba"] alone (the wheels and .whl/ together exceed
# what one call carries): install the kernels where the warm machine keeps them for the next calls. The GPU
# prelude puts /tmp/site-mamba on PYTHONPATH when it exists.
set -eu
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site-mamba \
  .whl-mamba/*.whl
ls /tmp/site-mamba
