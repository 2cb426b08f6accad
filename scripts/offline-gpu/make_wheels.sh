# Collect into .whl/ (ignored by git) the wheels that the GPU machine lack, for Python 3.12 on x86-64:
# the notebook's papermill, ipykernel and altair, deepspeed with its needs, submitit, and pandas. Run here, from
# the repository root, after `make install` (deepspeed's pure-Python wheel is built with the venv's torch).
# A fresh checkout has no .whl/: without it the GPU prelude prints "wheel install failed" and the notebook stops.
set -eu
PLATFORMS="--platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64"
mkdir -p .whl
python3 -m pip download -q --only-binary=:all: --python-version 3.12 --implementation cp $PLATFORMS -d .whl \
  papermill ipykernel altair pydantic hjson submitit einops
# pandas 2.2 works with the numpy 1.26+ or 2.x that the image's torch brings.
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp $PLATFORMS \
  -d .whl pandas==2.2.3 pytz six
.venv/bin/python -m pip wheel -q --no-deps --no-build-isolation deepspeed==0.19.8 -w .whl
ls .whl | wc -l
du -sh .whl
