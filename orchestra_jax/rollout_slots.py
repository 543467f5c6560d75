"""How busy the lockstep rollout keeps its decode rows: a recording proxy of a `orchestra_jax.sampler.Sampler`
(`RecordingSampler`) and the accounting of its generate calls (`slot_accounting`).

Per `generate` call (one assistant turn of the whole batch) with B rows, the batch runs steps = max over rows of
the tokens generated (the decode loop stops when every row is done), so it spends B x steps row-decode-steps, of
which busy = tokens generated (a row decoding its own turn), waiting = steps - own tokens for a row still in its
episode that finished this turn early, ended = steps for a row whose episode has ended and still holds its slot;
idle fraction = (waiting + ended) / all. `benchmarks/bench_rollout_slots.py` reports them on the main job.
"""

from __future__ import annotations

import time

import numpy as np

__all__ = ["RecordingSampler", "slot_accounting"]


class RecordingSampler:
    """Forwards prefill / extend / has_room / generate to a `Sampler`; records each generate call's
    active flags, tokens per row and seconds (`calls`)."""

    def __init__(self, sampler):
        self.sampler = sampler
        self.calls: list[dict] = []
        self.generate_s = 0.0

    def prefill(self, *a, **k):
        return self.sampler.prefill(*a, **k)

    def extend(self, *a, **k):
        return self.sampler.extend(*a, **k)

    def has_room(self, *a, **k):
        return self.sampler.has_room(*a, **k)

    def generate(self, state, *a, active=None, **k):
        t = time.perf_counter()
        state, out = self.sampler.generate(state, *a, active=active, **k)
        sec = time.perf_counter() - t
        self.generate_s += sec
        b = len(out.tokens)
        self.calls.append({"active": [True] * b if active is None else [bool(x) for x in active],
                           "tokens": [len(x) for x in out.tokens], "seconds": sec})
        return state, out


def slot_accounting(calls: list[dict]) -> dict:
    """Row-decode-step counts of lockstep generate calls (see the module docstring): busy, waiting,
    ended, total, idle_fraction, per-turn rows; from `RecordingSampler.calls`."""
    busy = waiting = ended = 0
    per_turn = []
    for c in calls:
        steps = max(c["tokens"], default=0)
        act = np.asarray(c["active"], bool)
        tok = np.asarray(c["tokens"], int)
        b_busy, b_wait, b_end = int(tok.sum()), int((steps - tok[act]).sum()), int(steps * (~act).sum())
        busy, waiting, ended = busy + b_busy, waiting + b_wait, ended + b_end
        per_turn.append({"active_rows": int(act.sum()), "rows": len(act), "steps": steps,
                         "idle_fraction": (b_wait + b_end) / max(1, len(act) * steps)})
    total = busy + waiting + ended
    return {"busy": busy, "waiting": waiting, "ended": ended, "total": total,
            "idle_fraction": (waiting + ended) / max(1, total), "waiting_fraction": waiting / max(1, total),
            "ended_fraction": ended / max(1, total), "turns": per_turn}
