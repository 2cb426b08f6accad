# Collect into .whl/ (ignored by git) the wheels that the GPU machines lack, for Python 3.12 on x86-64: the
# notebook's papermill, ipykernel and altair, deepspeed with its needs, submitit, pandas, and the libraries of the
# switches beyond the paper (liger-kernel, torchao), at the exact versions and hashes of
# requirements/gpu-wheels.lock.txt. Run here, from the repository root, after `make install` (deepspeed's
# pure-Python wheel is built with the venv's torch). A fresh checkout has no .whl/: without it the GPU prelude
# prints "wheel install failed" and the notebook stops.
#   bash scripts/offline-gpu/make_wheels.sh            the locked wheels
#   bash scripts/offline-gpu/make_wheels.sh --refresh  resolve them afresh and rewrite the lock (`make lock-gpu`)
set -eu
LOCK=requirements/gpu-wheels.lock.txt
DEEPSPEED=deepspeed==0.19.8  # an sdist on the registry: its wheel is built here, so it is pinned, not hashed
PLATFORMS="--platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64"
DOWNLOAD="python3 -m pip download -q --only-binary=:all: --python-version 3.12 --implementation cp $PLATFORMS -d .whl"
rm -rf .whl && mkdir -p .whl
if [ "${1:-}" = --refresh ]; then
  $DOWNLOAD papermill ipykernel altair pydantic hjson submitit einops
  # pandas 2.2 works with the numpy 1.26+ or 2.x that the image's torch brings.
  $DOWNLOAD --no-deps pandas==2.2.3 pytz six
  # The switches beyond the paper, without their dependencies (the image's torch 2.11.0+cu130 and its triton
  # stand): liger-kernel, pure Python over Triton (the fused cross-entropy), and torchao 0.17.0, the release its
  # compatibility table pairs with torch 2.11 (github.com/pytorch/ao/issues/2919).
  $DOWNLOAD --no-deps liger-kernel==0.8.5 torchao==0.17.0
  {
    echo "# The wheels that travel to the GPU machines (Python 3.12, x86-64), exactly as scripts/offline-gpu/make_wheels.sh"
    echo "# --refresh resolved them; make_wheels.sh downloads these and nothing else. $DEEPSPEED is built from its sdist."
    for w in .whl/*.whl; do
      f=$(basename "$w"); name=${f%%-*}; rest=${f#*-}; version=${rest%%-*}
      echo "$name==$version \\"
      echo "    --hash=sha256:$(sha256sum "$w" | cut -d' ' -f1)"
    done
  } > $LOCK
else
  $DOWNLOAD --no-deps --require-hashes -r $LOCK
fi
.venv/bin/python -m pip wheel -q --no-deps --no-build-isolation $DEEPSPEED -w .whl
ls .whl | wc -l
du -sh .whl
