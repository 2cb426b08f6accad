# Build causal-conv1d and mamba-ssm wheels for the GPU machine (Python 3.12, torch 2.11.0+cu130, H100/H200
# = sm_90) here, on the CPU, into .whl-mamba/ (ignored by git), so that Mamba-2.8B can run there with its
# kernels. Neither project has binary wheels on the registry and the GPU machines cannot download; building
# there costs about half an hour of machine time, here none. Needs pyenv's Python 3.12 and CUDA 13.0's nvcc (this machine has both).
# Both setup.py files hard-code -gencode flags for about nine architectures: they are cut to sm_90 alone.
# Run 6 on 2 cores: causal-conv1d in about 7 minutes, mamba-ssm in about 14; run it in the background (nohup).
# Debug sections are stripped (about 57 MiB for both wheels): together with .whl/ they exceed the 64 MiB a
# device call carries, so a first call carries .whl-mamba alone and installs it (install_mamba.sh).
set -eu
ROOT=$PWD
W=${MAMBA_BUILD_DIR:-/tmp/mamba-build}
PY312=${PY312:-/root/.pyenv/versions/3.12.1/bin/python}
mkdir -p "$W" .whl-mamba
cd "$W"
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 -d . torch==2.11.0
for p in causal-conv1d==1.7.0 mamba-ssm==2.3.2.post1; do  # sdists: pip would need torch just to read them
  name=${p%%==*}; version=${p##*==}
  url=$(curl -s "https://pypi.org/simple/$name/" -H "Accept: application/vnd.pypi.simple.v1+json" |
        python3 -c "import sys, json; print(next(f['url'] for f in json.load(sys.stdin)['files'] if f['filename'].endswith('-$version.tar.gz')))")
  curl -s -o "$name.tar.gz" "$url" && tar xzf "$name.tar.gz"
done
python3 - <<'PY'
import glob
for p in glob.glob("*/setup.py"):
    s = open(p).read()
    a = s.index('cc_flag.append("arch=compute_75,code=sm_75")')
    a = s.rindex("\n", 0, s.rindex('cc_flag.append("-gencode")', 0, a)) + 1
    b = s.index("\n", s.index("arch=compute_121,code=sm_121")) + 1
    indent = s[a:s.index("cc_flag", a)]
    s = s[:a] + f'{indent}cc_flag.append("-gencode")\n{indent}cc_flag.append("arch=compute_90,code=sm_90")\n' + s[b:]
    open(p, "w").write(s)
PY
[ -d venv ] || "$PY312" -m venv venv
venv/bin/pip install -q ./torch-2.11.0-*.whl numpy ninja wheel packaging einops "setuptools<82"
export CUDA_HOME=${CUDA_HOME:-/usr/local/cuda-13.0} MAX_JOBS=${MAX_JOBS:-2}
export CAUSAL_CONV1D_FORCE_BUILD=TRUE MAMBA_FORCE_BUILD=TRUE
for d in causal_conv1d-1.7.0 mamba_ssm-2.3.2.post1; do
  start=$(date +%s)
  (cd "$d" && nice -n 19 ../venv/bin/pip wheel --no-deps --no-build-isolation . -w ../out) > "$d.log" 2>&1
  echo "$d built in $(( $(date +%s) - start )) s"
done
rm -rf unpacked && mkdir unpacked
for w in out/*.whl; do venv/bin/wheel unpack -d unpacked "$w" > /dev/null; done
find unpacked -name "*.so" -exec strip --strip-debug {} \;
for d in unpacked/*/; do venv/bin/wheel pack -d "$ROOT/.whl-mamba" "$d" > /dev/null; done
venv/bin/pip download -q --no-deps -d "$ROOT/.whl-mamba" einops==0.8.2  # mamba-ssm imports it; .whl/ is not carried
ls -la "$ROOT"/.whl-mamba
