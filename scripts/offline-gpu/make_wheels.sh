# Collect into .whl/ (ignored by git) the wheels that the GPU machine lack, for Python 3.12 on x86-64:
# the notebook's papermill, ipykernel and altair, deepspeed with its needs, submitit, pandas, and the libraries of
# the switches beyond the paper (liger-kernel, torchao). Run here, from
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
# The switches beyond the paper, without their dependencies (the image's torch 2.11.0+cu130 and its triton stand):
# liger-kernel, pure Python over Triton (the fused cross-entropy), and torchao 0.17.0, the release its
# compatibility table pairs with torch 2.11 (github.com/pytorch/ao/issues/2919; ABI-stable from 0.17.0 on, and
# 0.18.0 dropped nothing the float8 recipes need, but 0.17.0 is the pairing the table states).
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp $PLATFORMS \
  -d .whl liger-kernel==0.8.5 torchao==0.17.0
ls .whl | wc -l
du -sh .whl
