# Two commands do everything on a fresh machine: `make bench` and `make test`.
# Environments: .venv (Keras 3: tensorflow, jax, torch, numpy) and .envs/<stack> (Keras 2).
PYENV_ROOT ?= $(shell pyenv root 2>/dev/null || echo $$HOME/.pyenv)
python_for = $(firstword $(wildcard $(PYENV_ROOT)/versions/$(1).*/bin/python) python$(1))
PY311 ?= $(call python_for,3.11)
VENV := .venv
STAMP := $(VENV)/.kmicro-installed
PIP := $(VENV)/bin/pip --disable-pip-version-check -q
# Python of each Keras 2 stack (must match kmicro/stacks.py)
PY_theano := 3.9
PY_theano-2019 := 3.7
PY_tf1 := 3.7

.PHONY: env legacy openblas bench test calibrate clean

env: $(STAMP) .envs/theano/.installed

legacy: .envs/tf1/.installed .envs/theano-2019/.installed

$(STAMP): requirements/keras3.txt pyproject.toml
	test -x $(VENV)/bin/python || $(PY311) -m venv $(VENV)
	$(PIP) install -r requirements/keras3.txt
	$(PIP) install --no-deps --no-build-isolation -e .
	touch $@

# Theano links convolutions against a real BLAS.
openblas:
	@echo 'int main(void){return 0;}' | gcc -x c - -lopenblas -o /dev/null 2>/dev/null || \
	  (apt-get update -qq && apt-get install -y -qq libopenblas-dev)

.envs/%/.installed: requirements/%.txt | openblas
	test -x .envs/$*/bin/python || $(call python_for,$(PY_$*)) -m venv .envs/$*
	.envs/$*/bin/pip --disable-pip-version-check -q install "pip<24" "setuptools<60" wheel
	.envs/$*/bin/pip --disable-pip-version-check -q install -r $<
	touch $@

RUN := $(shell date +%Y%m%d-%H%M%S)
bench: env
	$(VENV)/bin/kmicro ops --json results/ops-$(RUN).json
	$(VENV)/bin/kmicro report results/ops-$(RUN).json --peaks -o results/report-$(RUN).html

test: env
	$(VENV)/bin/python -m pytest -q

calibrate: env
	$(VENV)/bin/kmicro calibrate --ops batchnorm,dense

clean:
	rm -rf $(VENV) .envs .cache
