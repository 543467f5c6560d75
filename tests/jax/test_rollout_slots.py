"""`orchestra_jax.rollout_slots`: the accounting of lockstep row-decode-steps (busy / waiting / ended)."""

from __future__ import annotations

from orchestra_jax.rollout_slots import RecordingSampler, slot_accounting


def test_slot_accounting_splits_idle_steps_into_waiting_and_ended():
    calls = [
        {"active": [True, True, True], "tokens": [4, 2, 1], "seconds": 0.1},  # 3 x 4 steps: busy 7, waiting 5
        {"active": [True, False, False], "tokens": [3, 0, 0], "seconds": 0.1},  # 3 x 3 steps: busy 3, ended 6
    ]
    a = slot_accounting(calls)
    assert (a["busy"], a["waiting"], a["ended"], a["total"]) == (10, 5, 6, 21)
    assert a["idle_fraction"] == 11 / 21
    assert (a["waiting_fraction"], a["ended_fraction"]) == (5 / 21, 6 / 21)
    assert [t["steps"] for t in a["turns"]] == [4, 3]
    assert a["turns"][1] == {"active_rows": 1, "rows": 3, "steps": 3, "idle_fraction": 6 / 9}
    assert slot_accounting([])["idle_fraction"] == 0.0


def test_recording_sampler_forwards_and_records():
    class Out:
        tokens = [[1, 2], []]

    class Fake:
        def generate(self, state, max_new_tokens, active=None):
            return state + 1, Out()

        def prefill(self, prompts):
            return len(prompts)

    rec = RecordingSampler(Fake())
    assert rec.prefill([[1], [2]]) == 2
    state, out = rec.generate(5, max_new_tokens=3, active=[True, False])
    assert state == 6 and out.tokens == [[1, 2], []]
    assert rec.calls[0]["active"] == [True, False] and rec.calls[0]["tokens"] == [2, 0]
