#!/usr/bin/env bash
# Installs NVIDIA's run-time CUDA compiler (NVRTC, the PyPI wheel
# `nvidia-cuda-nvrtc`, 13.0.x like the CUDA 13.0 of the GPU machines) into a
# git-ignored virtual environment, so that machines without CUDA can compile
# quilt's kernels to PTX (the CI compile check of crates/quilt-cuda).
#
# Usage:  scripts/nvrtc-venv.sh [VENV_DIR]        (default: .venv-nvrtc)
#         export LD_LIBRARY_PATH="$(scripts/nvrtc-venv.sh --print-path)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
#
# The last line printed is the directory to put on LD_LIBRARY_PATH; with
# --print-path nothing else is printed (the venv is created if missing).
set -euo pipefail

quiet=0
if [[ "${1:-}" == "--print-path" ]]; then
    quiet=1
    shift
fi
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${1:-$root/.venv-nvrtc}"
version="${NVRTC_VERSION:-13.0.*}"

log() { if [[ $quiet -eq 0 ]]; then echo "$@" >&2; fi; }

if [[ ! -x "$venv/bin/python" ]]; then
    log "creating $venv"
    python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -m pip show nvidia-cuda-nvrtc >/dev/null 2>&1; then
    log "installing nvidia-cuda-nvrtc==$version"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "nvidia-cuda-nvrtc==$version" >&2
fi

# The wheel's layout moved between releases (nvidia/cuda_nvrtc/lib,
# nvidia/cu13/lib...): look for the library instead of assuming a path.
lib="$(find "$venv" -name 'libnvrtc.so.13*' -not -name '*builtins*' | sort | head -n 1)"
if [[ -z "$lib" ]]; then
    echo "error: libnvrtc.so.13 not found under $venv" >&2
    exit 1
fi
dir="$(dirname "$lib")"
# cudarc's loader (cuda-13000) tries libnvrtc.so, libnvrtc.so.13, ...:
# make sure the exact name libnvrtc.so.13 exists next to the real file.
if [[ ! -e "$dir/libnvrtc.so.13" ]]; then
    ln -s "$(basename "$lib")" "$dir/libnvrtc.so.13"
fi
if ! ls "$dir"/libnvrtc-builtins.so.13* >/dev/null 2>&1; then
    echo "error: libnvrtc-builtins.so.13* missing next to $lib" >&2
    exit 1
fi
log "NVRTC: $dir/libnvrtc.so.13"
log "export LD_LIBRARY_PATH=\"$dir\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}\""
echo "$dir"
