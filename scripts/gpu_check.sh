#!/usr/bin/env bash
# GPU check: kmicro ops --device gpu for the jax and torch stacks on the default catalog (time
# and memory), then an A/A of each on the GPU.
#
#   scripts/gpu_check.sh OUTDIR [WHEELHOUSE]
#
# Needs an NVIDIA GPU (nvidia-smi). No internet is needed when WHEELHOUSE (or $KMICRO_WHEELS)
# holds the wheels of requirements/gpu.txt and their dependencies, made on a connected machine
# with:  pip download -r requirements/gpu.txt -d WHEELHOUSE --python-version 3.11 --only-binary=:all:
# If .venv already has GPU-enabled jax and torch, nothing is installed; if the machine's python3
# has them (a CUDA image), .venv reuses them and only keras (+ small deps) is installed.
# Writes OUTDIR/gpu.json (kmicro records, peak bytes included), OUTDIR/gpu-table.txt,
# OUTDIR/gpu-memory.txt, OUTDIR/environment.txt and a GPU A/A per stack (aa-gpu-S.json/.txt).
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

gpu_ready() {  # gpu_ready PYTHON: jax and torch importable there and both see a GPU
  [ -x "$1" ] && "$1" - <<'PY' 2>/dev/null
import jax, torch
assert jax.devices()[0].platform == "gpu" and torch.cuda.is_available()
PY
}

pip_args=(--disable-pip-version-check -q)
[ -n "$wheels" ] && pip_args+=(--no-index --find-links "$wheels")
image_python=$(command -v python3 || true)

if gpu_ready .venv/bin/python; then
  :
elif [ -n "$image_python" ] && gpu_ready "$image_python"; then
  # A GPU image that already carries CUDA builds of jax and torch (the usual case on an
  # offline GPU box): reuse them through a .pth file and install only what is missing,
  # e.g. keras and its small dependencies from WHEELHOUSE. Its versions, not our pins,
  # then hold for jax/torch; environment.txt records them.
  [ -x .venv/bin/python ] || "$image_python" -m venv .venv
  image_site=$("$image_python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  venv_site=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  echo "$image_site" > "$venv_site/_gpu_image.pth"
  .venv/bin/python -m pip install "${pip_args[@]}" "$(grep '^keras==' requirements/gpu.txt)"
  .venv/bin/python -m pip install "${pip_args[@]}" --no-deps --no-build-isolation -e .
else
  python=$(command -v python3.11 || echo "$image_python")
  [ -x .venv/bin/python ] || "$python" -m venv .venv
  .venv/bin/python -m pip install "${pip_args[@]}" -r requirements/gpu.txt
  .venv/bin/python -m pip install "${pip_args[@]}" --no-deps --no-build-isolation -e .
fi
gpu_ready .venv/bin/python || { echo "gpu_check: jax/torch installed but they see no GPU" >&2; exit 1; }

{ date -u; nvidia-smi -L; .venv/bin/python -m pip list 2>/dev/null | grep -Ei '^(keras|jax|torch|numpy|nvidia-cudnn)'; } \
  > "$out/environment.txt"
# COLUMNS keeps the saved table readable; the JSON is the record of truth.
COLUMNS=160 timeout 300 .venv/bin/kmicro ops --stacks jax,torch --device gpu \
  --json "$out/gpu.json" | tee "$out/gpu-table.txt"
# The same records' memory: peak bytes per pass by each framework's GPU allocator.
COLUMNS=160 .venv/bin/kmicro report "$out/gpu.json" --metric memory > "$out/gpu-memory.txt"
# A/A on the GPU with kmicro ab's defaults (a shorter budget): the smallest effect it tells
# apart there.
for s in jax torch; do
  COLUMNS=160 timeout 200 .venv/bin/kmicro ab "$s" "$s" --device gpu --ops conv2d,batchnorm,dense \
    --budget 90 --json "$out/aa-gpu-$s.json" > "$out/aa-gpu-$s.txt" 2>&1 || echo "gpu_check: A/A on $s failed" >&2
done
