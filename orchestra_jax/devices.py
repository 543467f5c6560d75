"""Peak numbers of the accelerators the project measures on, for roofline and MFU figures
(`benchmarks/device/bench_device.py`). Sources: NVIDIA's H100 SXM and H200 datasheets (HBM bandwidth,
dense BF16 tensor-core FLOP/s without sparsity)."""

from __future__ import annotations

__all__ = ["DEVICE_TABLE", "device_specs"]

# device_kind substring -> (HBM bytes/s, peak dense bf16 FLOP/s); first match wins
DEVICE_TABLE = (("H200", 4.8e12, 989e12), ("H100", 3.35e12, 989e12))


def device_specs(kind: str) -> tuple[float | None, float | None]:
    """(HBM bandwidth B/s, peak bf16 FLOP/s) of a `jax.Device.device_kind`, (None, None) if not tabled."""
    for key, bw, flops in DEVICE_TABLE:
        if key.lower() in kind.lower():
            return bw, flops
    return None, None
