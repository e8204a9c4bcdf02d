#!/usr/bin/env bash
# GPU check: kmicro ops --device gpu for the jax and torch stacks on the default catalog.
#
#   scripts/gpu_check.sh OUTDIR [WHEELHOUSE]
#
# Needs an NVIDIA GPU (nvidia-smi). No internet is needed when WHEELHOUSE (or $KMICRO_WHEELS)
# holds the wheels of requirements/gpu.txt and their dependencies, made on a connected machine
# with:  pip download -r requirements/gpu.txt -d WHEELHOUSE --python-version 3.11 --only-binary=:all:
# If .venv already has GPU-enabled jax and torch, nothing is installed.
# Writes OUTDIR/gpu.json (kmicro records), OUTDIR/gpu-table.txt and OUTDIR/environment.txt.
set -euo pipefail
usage() { echo "usage: scripts/gpu_check.sh OUTDIR [WHEELHOUSE]" >&2; exit 2; }
[ $# -ge 1 ] && [ $# -le 2 ] || usage
out=$1
wheels=${2:-${KMICRO_WHEELS:-}}
cd "$(dirname "$0")/.."

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu_check: no NVIDIA GPU visible (nvidia-smi missing or failing); nothing to check" >&2
  exit 2
fi
mkdir -p "$out"

gpu_ready() {
  [ -x .venv/bin/python ] && .venv/bin/python - <<'PY' 2>/dev/null
import jax, torch
assert jax.devices()[0].platform == "gpu" and torch.cuda.is_available()
PY
}

if ! gpu_ready; then
  python=$(command -v python3.11 || command -v python3)
  [ -x .venv/bin/python ] || "$python" -m venv .venv
  pip_args=(--disable-pip-version-check -q)
  [ -n "$wheels" ] && pip_args+=(--no-index --find-links "$wheels")
  .venv/bin/pip install "${pip_args[@]}" -r requirements/gpu.txt
  .venv/bin/pip install "${pip_args[@]}" --no-deps --no-build-isolation -e .
  gpu_ready || { echo "gpu_check: jax/torch installed but they see no GPU" >&2; exit 1; }
fi

{ date -u; nvidia-smi -L; .venv/bin/pip freeze | grep -Ei '^(keras|jax|jaxlib|jax-cuda|torch|numpy)'; } \
  > "$out/environment.txt"
# COLUMNS keeps the saved table readable; the JSON is the record of truth.
COLUMNS=160 timeout 570 .venv/bin/kmicro ops --stacks jax,torch --device gpu \
  --json "$out/gpu.json" | tee "$out/gpu-table.txt"
