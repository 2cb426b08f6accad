# Two commands do all set-up on a fresh machine: `make book` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
# timm needs torchvision; this pair installs together (from local disk where the machine has it).
TORCH_PINS := torch==2.14.1 torchvision==0.29.1

.PHONY: book test install browser clean

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q $(TORCH_PINS)
	$(PY) -m pip install -q -e '.[book,test]' $(TORCH_PINS)
	touch $(STAMP)

# Debian's Chromium drives the browser tests (Playwright never downloads a browser here).
browser:
	@command -v chromium >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq chromium >/dev/null)

book: $(STAMP)
	$(VENV)/bin/python -m academic_bench.book.build

test: $(STAMP) browser
	$(PY) -m pytest -q

clean:
	rm -rf _build
