#!/usr/bin/env bash
# Device benchmark (issue 36): decode tokens/s at batch 1/32/128 against the HBM bound and the GRPO
# train step's MFU at 4k tokens, Qwen3-8B shapes with random bf16 weights; prints one JSON line.
# Self-contained: run from anywhere; installs `pip install -e .[cuda12]` only when an NVIDIA GPU is
# present and jax has no GPU backend. Arguments go to bench_device.py (e.g. --config tiny on CPU).
# Whole run bounded by ORCHESTRA_DEVICE_TIMEOUT seconds (default 570, under the 10-minute slot).
set -euo pipefail
cd "$(dirname "$0")/../.."
PY="${PYTHON:-python}"
if ! "$PY" -c "import jax, sys; sys.exit(0 if jax.default_backend() == 'gpu' else 1)" 2>/dev/null; then
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    echo "run.sh: jax has no GPU backend; installing the cuda12 extra" >&2
    "$PY" -m pip install -q -e ".[cuda12]" >&2
  fi
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export XLA_PYTHON_CLIENT_PREALLOCATE="${XLA_PYTHON_CLIENT_PREALLOCATE:-false}"
exec timeout "${ORCHESTRA_DEVICE_TIMEOUT:-570}" "$PY" benchmarks/device/bench_device.py "$@"
