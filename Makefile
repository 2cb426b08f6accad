# Two commands do all set-up on a fresh machine: `make book` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
LOCK := requirements/lock.txt
# pip installs the lock (it takes torch from local disk where the machine has it; uv would download a CUDA build);
# uv only resolves it, for Python 3.11 on x86-64 Linux, whatever machine refreshes it.
PIP_VERSION := 26.3
UV_VERSION := 0.13.9

.PHONY: book test install browser clean lock lock-gpu

install: $(STAMP)

$(STAMP): $(LOCK) pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q pip==$(PIP_VERSION)
	$(PY) -m pip install -q --require-hashes -r $(LOCK)
	$(PY) -m pip install -q --no-deps -e .
	touch $(STAMP)

# Refresh the lock from pyproject.toml and the torch pair of requirements/torch.in, install it, and compute the
# derived data again: review the lock's diff with the data it changes.
lock:
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q uv==$(UV_VERSION)
	$(VENV)/bin/uv pip compile pyproject.toml requirements/torch.in --extra book --extra test --python-version 3.11 \
		--python-platform x86_64-manylinux_2_28 --generate-hashes --quiet -o $(LOCK)
	$(MAKE) install
	$(PY) -c "from academic_bench.estimate import kept; kept.write_shipped()"
	$(PY) -c "from academic_bench.answer import published_ranges; published_ranges.write_shipped()"

# Refresh the GPU machines' wheels and their lock (requirements/gpu-wheels.lock.txt).
lock-gpu: $(STAMP)
	bash scripts/offline-gpu/make_wheels.sh --refresh

# Debian's Chromium drives the browser tests (Playwright never downloads a browser here).
browser:
	@command -v chromium >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq chromium >/dev/null)

book: $(STAMP)
	$(VENV)/bin/python -m academic_bench.book.build

test: $(STAMP) browser
	$(PY) -m pytest -q

clean:
	rm -rf _build
