# Two commands do everything on a fresh machine: `make bench` and `make test`.
PY311 ?= $(shell command -v python3.11 || echo python3)
VENV := .venv
STAMP := $(VENV)/.kmicro-installed
PIP := $(VENV)/bin/pip --disable-pip-version-check -q

.PHONY: env bench test calibrate clean

env: $(STAMP)

$(STAMP): requirements/keras3.txt pyproject.toml
	test -x $(VENV)/bin/python || $(PY311) -m venv $(VENV)
	$(PIP) install -r requirements/keras3.txt
	$(PIP) install --no-deps --no-build-isolation -e .
	touch $@

bench: env
	$(VENV)/bin/kmicro ops

test: env
	$(VENV)/bin/python -m pytest -q

calibrate: env
	$(VENV)/bin/kmicro calibrate --ops batchnorm,dense

clean:
	rm -rf $(VENV) .envs .cache
