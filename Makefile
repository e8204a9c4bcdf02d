# Two commands do everything on a fresh machine: `make bench` and `make test`.
# Environments: .venv (Keras 3: tensorflow, jax, torch, numpy) and .envs/<stack> (Keras 2).
PYENV_ROOT ?= $(shell pyenv root 2>/dev/null || echo $$HOME/.pyenv)
python_for = $(firstword $(wildcard $(PYENV_ROOT)/versions/$(1).*/bin/python) python$(1))
PY311 ?= $(call python_for,3.11)
VENV := .venv
STAMP := $(VENV)/.kmicro-installed
PIP := $(VENV)/bin/pip --disable-pip-version-check -q
# Python of each Keras 2 stack (must match kmicro/core/stacks.py)
PY_theano := 3.9
PY_theano-2019 := 3.7
PY_tf1 := 3.7
PY_keras1-theano := 3.6

.PHONY: env legacy cluster openblas chromium bench test validate validate-quick calibrate clean asv-machine asv-check asv-quick asv-run \
        asv-versions asv-find asv-html asv-preview asv-reference asv-keras1

env: $(STAMP) .envs/theano/.installed

legacy: .envs/tf1/.installed .envs/theano-2019/.installed .envs/keras1-theano/.installed

# uv installs the pins (seconds from its cache, where pip took minutes for every fresh clone);
# it reads no pip configuration, so it gets the machine's wheel folders (the CPU torch here).
# --compile-bytecode: a worker then starts in a third of the time where Python may not write
# its .pyc files (PYTHONDONTWRITEBYTECODE, read-only installs): torch 9.3 s -> 3.4 s.
UV_LINKS := $(foreach d,$(PIP_FIND_LINKS),--find-links $(d))
$(STAMP): requirements/keras3.txt pyproject.toml
	test -x $(VENV)/bin/python || $(PY311) -m venv $(VENV)
	$(PIP) install $$(grep -E '^uv==' requirements/keras3.txt)
	$(VENV)/bin/uv pip install -q --compile-bytecode --python $(VENV)/bin/python -r requirements/keras3.txt $(UV_LINKS)
	$(PIP) install --no-deps --no-build-isolation -e .
	touch $@

# Ray, for sweeps and bisections on a cluster (kmicro[cluster]): an extra, kept out of `make env`.
CLUSTER_STAMP := $(VENV)/.kmicro-cluster-installed
cluster: $(CLUSTER_STAMP)
$(CLUSTER_STAMP): requirements/cluster.txt $(STAMP)
	$(VENV)/bin/uv pip install -q --compile-bytecode --python $(VENV)/bin/python -r $< \
	  -c requirements/keras3.txt $(UV_LINKS)
	touch $@

# Theano links convolutions against a real BLAS.
openblas:
	@echo 'int main(void){return 0;}' | gcc -x c - -lopenblas -o /dev/null 2>/dev/null || \
	  (apt-get update -qq && apt-get install -y -qq libopenblas-dev)

# Keras 1.2.1 and Theano 0.8.2 are sdists that build against the NumPy already installed: the
# wheels go in first, then the rest without build isolation (Python 3.6's last pip and wheel).
.envs/keras1-theano/.installed: requirements/keras1-theano.txt | openblas
	test -x .envs/keras1-theano/bin/python || $(call python_for,3.6) -m venv .envs/keras1-theano
	.envs/keras1-theano/bin/pip --disable-pip-version-check -q install "pip<22" "setuptools<60" "wheel<0.38"
	.envs/keras1-theano/bin/pip --disable-pip-version-check -q install $$(grep -iE '^(numpy|scipy)==' $<)
	.envs/keras1-theano/bin/pip --disable-pip-version-check -q install --no-build-isolation -r $<
	touch $@

.envs/%/.installed: requirements/%.txt | openblas
	test -x .envs/$*/bin/python || $(call python_for,$(PY_$*)) -m venv .envs/$*
	.envs/$*/bin/pip --disable-pip-version-check -q install "pip<24" "setuptools<60" wheel
	.envs/$*/bin/pip --disable-pip-version-check -q install -r $<
	touch $@

# Headless Chromium checks the HTML report and asv's published pages in the tests.
chromium:
	@command -v chromium >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq chromium)

RUN := $(shell date +%Y%m%d-%H%M%S)
bench: env
	$(VENV)/bin/kmicro ops --json results/ops-$(RUN).json
	$(VENV)/bin/kmicro report results/ops-$(RUN).json --peaks -o results/report-$(RUN).html

# Two pytest workers share the two cores, except for the tests whose assertions compare
# measured times (marked timing): those run alone afterwards, so no other test disturbs them.
test: env cluster chromium asv-machine
	$(VENV)/bin/lint-imports --no-cache  # the layering contracts in pyproject.toml
	$(VENV)/bin/python -m pytest -q -n 2 --dist loadgroup -m "not timing" --durations=15
	$(VENV)/bin/python -m pytest -q -m timing --durations=10

# Re-measure the claims of docs/validation.md here (scripts/validate; ARGS=--only aa,...).
validate: env
	$(VENV)/bin/python scripts/validate $(ARGS)

validate-quick: env
	$(VENV)/bin/python scripts/validate --quick $(ARGS)

calibrate: env
	$(VENV)/bin/kmicro calibrate --ops batchnorm,dense

# --- asv (docs/guide-asv.md). asv.conf.json is written by `python -m kmicro.asvconf`. ---------
ASV := $(VENV)/bin/asv
# virtualenv finds each stack's Python on PATH (pyenv versions are not all on it).
space := $(subst ,, )
ASV_PATH := $(subst $(space),:,$(foreach v,3.11 3.9,$(patsubst %/,%,$(dir $(call python_for,$(v)))))):$(PATH)
# asv's benchmark processes get the allocator policy kmicro's workers run with (MALLOC_TUNABLES
# in kmicro/core/stacks.py; tests/test_stacks.py keeps the two equal).
MALLOC_TUNABLES := glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=1073741824:glibc.malloc.arena_max=1
ASV_ENV := PATH="$(ASV_PATH)" GLIBC_TUNABLES="$(MALLOC_TUNABLES)"
# The fast subset (CI, bisection): BN in both layouts and Dense(10), forward and fwd+bwd
# (asv quotes string parameters: '.' stands for the quote).
ASV_QUICK ?= Ops.time_pass\(.(batchnorm\(\)@32x(32x32x16/cl|16x32x32/cf)|dense\(units=10\)@32x512)., .(forward|backward).\)
RANGE ?= HEAD^!
BACKEND ?= jax
LAUNCH ?= --launch-method forkserver
# Rounds alternate between commits and environments, so drift hits them alike (asv's own option).
INTERLEAVE ?= --interleave-rounds

asv-machine:
	test -f $$HOME/.asv-machine.json || $(ASV) machine --yes

asv-check: env
	KERAS_BACKEND=$(BACKEND) $(ASV) check -E existing:$(VENV)/bin/python

# A real run of the subset in the existing .venv, nothing saved (what CI runs).
asv-quick: env asv-machine
	KERAS_BACKEND=$(BACKEND) $(ASV) run -E existing:$(VENV)/bin/python --quick -n \
	  $(LAUNCH) -b '$(ASV_QUICK)'

# Every environment of asv.conf.json on RANGE (default: the current commit), saved.
asv-run: env asv-machine
	$(ASV_ENV) $(ASV) run $(LAUNCH) $(INTERLEAVE) $(RANGE) $(if $(BENCH),-b '$(BENCH)')

# Other versions of one package: make asv-versions VARY=keras=3.15.1,3.14.0 BACKENDS=jax
BACKENDS ?= jax
comma := ,
asv-versions: env asv-machine
	$(VENV)/bin/python -m kmicro.asvconf --vary $(VARY) --backends $(BACKENDS) --no-keras2 \
	  -o asv.versions.conf.json
	$(ASV_ENV) $(ASV) --config asv.versions.conf.json run $(LAUNCH) $(INTERLEAVE) $(RANGE) \
	  -b '$(or $(BENCH),$(ASV_QUICK))'

# The relative suite's reference (benchmarks/relative.py, docs/guide-asv.md): per backend of BACKENDS,
# stack asv-ref-BACKEND = that stack with kmicro itself at ASV_REFERENCE_REV, made once, kept.
ASV_REFERENCE_REV ?= e9893ba
asv-reference: env
	for b in $(subst $(comma), ,$(BACKENDS)); do \
	  $(VENV)/bin/kmicro stack list | grep -qx "asv-ref-$$b" || \
	  $(VENV)/bin/kmicro env "asv-ref-$$b" --from "$$b" --set kmicro@$(ASV_REFERENCE_REV) --repo . \
	  || exit 2; done

# keras1-theano (report 000's stack, Python 3.6) is an existing asv environment, the stack's own
# .envs/keras1-theano: asv can neither create a Python 3.6 virtualenv nor build kmicro's wheel
# there. ASV_KERAS1_PY wraps its interpreter with asv's runner (installed apart, in ASV36) and
# this checkout's kmicro on its path, for the 3.6 processes only (asv itself runs in .venv).
ASV36 := .asv/runner-py3.6
ASV_KERAS1_PY := .asv/keras1-theano/python
$(ASV_KERAS1_PY): requirements/asv-runner-py3.6.txt .envs/keras1-theano/.installed
	$(PIP) install --upgrade --no-deps --only-binary :all: --python-version 3.6 \
	  --ignore-requires-python --target $(ASV36) -r $<
	mkdir -p $(@D)
	@# asv's benchmark.py drops PYTHONPATH from sys.path after importing the runner; it keeps
	@# ASV_PYTHONPATH.
	printf '#!/bin/sh\nPYTHONPATH="%s" ASV_PYTHONPATH="%s" KERAS_BACKEND=theano exec "%s" "$$@"\n' \
	  "$(CURDIR)/$(ASV36)" "$(CURDIR)" "$(CURDIR)/.envs/keras1-theano/bin/python" > $@
	chmod +x $@

# asv check, then a real run of the fast subset (or BENCH), nothing saved.
asv-keras1: env asv-machine $(ASV_KERAS1_PY)
	$(ASV_ENV) $(ASV) check -E existing:$(ASV_KERAS1_PY)
	$(ASV_ENV) $(ASV) run -E existing:$(ASV_KERAS1_PY) --quick -n $(LAUNCH) \
	  -b '$(or $(BENCH),$(ASV_QUICK))'

# Bisect one benchmark over a commit range in one stack's asv environment (docs/guide-asv.md):
#   make asv-find RANGE=GOOD~1..BAD [BENCH=regex] [BACKEND=jax|tensorflow|torch|numpy|theano]
asv-find: env asv-machine
	@case '$(RANGE)' in *..*) ;; *) false;; esac && \
	  [ $$(git rev-list --first-parent --count $(RANGE)) -ge 3 ] || \
	  { echo 'make asv-find: RANGE=GOOD~1..BAD with 3 commits or more' >&2; exit 2; }
	name=$$($(ASV_ENV) $(VENV)/bin/python scripts/asv_find_env.py $(BACKEND)) && \
	$(ASV_ENV) $(ASV) find -E "$$name" --skip-save $(LAUNCH) $(RANGE) '$(or $(BENCH),$(ASV_QUICK))'

# asv's pages with their JS/CSS local, viewable offline (docs/guide-asv.md).
asv-html: env
	$(ASV) publish
	$(VENV)/bin/python scripts/asv_html.py .asv/html

PORT ?= 8080
asv-preview: asv-html
	$(ASV) preview --port $(PORT)

clean:
	rm -rf $(VENV) .envs .cache .asv
