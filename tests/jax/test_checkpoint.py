"""orchestra_jax.checkpoint: digests written at save and verified at restore, fallback to the newest
intact checkpoint, clear errors for unreadable ones, and no non-finite state ever saved."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from orchestra_jax.checkpoint import INTEGRITY_KEY, Checkpointer, CheckpointError, NonFiniteStateError, state_digest


def _state(step: int) -> dict:
    rng = np.random.default_rng(step)
    return {"params": {"w_gate": jnp.asarray(rng.standard_normal((256, 256)), jnp.float32),
                       "norm": jnp.ones(8, jnp.bfloat16) * step},
            "step": jnp.int32(step)}


def _saved(tmp_path: Path, steps=(1, 2, 3)) -> Path:
    d = tmp_path / "ck"
    ck = Checkpointer(d, keep=3, async_save=False)
    for s in steps:
        ck.save(s, _state(s), {"seed": s})
    ck.close()
    return d


def _files(step_dir: Path) -> list[Path]:
    return sorted((p for p in step_dir.rglob("*") if p.is_file()), key=lambda p: p.stat().st_size)


def _same(a, b) -> bool:
    return all(np.array_equal(np.asarray(x), np.asarray(y)) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)))


def test_intact_round_trip_hides_the_integrity_record(tmp_path):
    d = _saved(tmp_path)
    state, meta = Checkpointer(d, async_save=False).restore(None, _state(0))
    assert meta == {"seed": 3} and _same(state, _state(3))
    digests, non_finite = state_digest(_state(3))
    assert non_finite == [] and set(digests) == {"['params']['norm']", "['params']['w_gate']", "['step']"}
    assert digests["['params']['w_gate']"]["shape"] == [256, 256] and len(digests["['step']"]["digest"]) == 16
    assert digests != state_digest(_state(2))[0]


@pytest.mark.parametrize("fill", [0x00, 0xFF, 0x41])
def test_overwritten_4kb_is_detected_and_the_newest_intact_step_restored(tmp_path, fill, caplog):
    d = _saved(tmp_path)
    data = _files(d / "3" / "state")[-1]  # the biggest file holds w_gate
    with open(data, "r+b") as f:
        f.seek(data.stat().st_size // 2)
        f.write(bytes([fill]) * 4096)
    ck = Checkpointer(d, async_save=False)
    with caplog.at_level(logging.WARNING, logger="orchestra_jax.checkpoint"):
        state, meta = ck.restore(None, _state(0))
    assert meta == {"seed": 2} and _same(state, _state(2))
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1 and "\n" not in warnings[0]
    assert warnings[0].startswith(f"checkpoint step 3 in {d} is damaged (") and warnings[0].endswith("trying step 2")
    assert ck.damaged_steps == {3}
    with pytest.raises(CheckpointError, match=r"checkpoint step 3 in .* is damaged: "):
        ck.restore(3, _state(0))


@pytest.mark.parametrize("damage", ["delete data file", "truncate manifest", "truncate meta"])
def test_unreadable_checkpoint_is_a_one_line_reason_not_a_tensorstore_dump(tmp_path, damage, caplog):
    d = _saved(tmp_path)
    if damage == "delete data file":
        _files(d / "3" / "state")[-1].unlink()
    elif damage == "truncate manifest":
        for m in (d / "3" / "state").rglob("manifest.ocdbt"):
            m.write_bytes(m.read_bytes()[:20])
    else:
        meta = d / "3" / "meta" / "metadata"
        meta.write_text(meta.read_text()[:10])
    with caplog.at_level(logging.WARNING, logger="orchestra_jax.checkpoint"):
        state, meta = Checkpointer(d, async_save=False).restore(None, _state(0))
    assert meta == {"seed": 2} and int(state["step"]) == 2
    (msg,) = [r.getMessage() for r in caplog.records]
    assert "checkpoint step 3" in msg and "cannot be read (" in msg and "\n" not in msg and len(msg) < 600


def test_every_step_damaged_is_a_clear_error(tmp_path):
    d = _saved(tmp_path, steps=(1, 2))
    for s in (1, 2):
        _files(d / str(s) / "state")[-1].unlink()
    with pytest.raises(CheckpointError) as e:
        Checkpointer(d, async_save=False).restore(None, _state(0))
    text = str(e.value)
    assert text.startswith(f"no intact checkpoint in {d}: step 2: cannot be read") and "step 1: cannot be read" in text
    assert "Fix:" in text and "DATA_LOSS" not in text.split("(", 1)[0]
    with pytest.raises(FileNotFoundError, match="no finalized checkpoint"):
        Checkpointer(tmp_path / "empty", async_save=False).restore(None, _state(0))


def test_non_finite_state_is_never_saved_and_keeps_the_good_ones(tmp_path):
    d = _saved(tmp_path)
    bad = _state(4)
    bad["params"]["w_gate"] = bad["params"]["w_gate"].at[3, 5].set(jnp.nan)
    ck = Checkpointer(d, keep=3, async_save=False)
    with pytest.raises(NonFiniteStateError, match=r"refusing to save checkpoint step 4 .* \['params'\]\['w_gate'\]"):
        ck.save(4, bad, {"seed": 4})
    ck.wait()
    assert ck.all_steps() == [1, 2, 3]
    with pytest.raises(ValueError, match="reserved"):
        ck.save(5, _state(5), {INTEGRITY_KEY: 1})


def test_a_damaged_step_is_replaced_when_saved_again(tmp_path):
    d = _saved(tmp_path)
    _files(d / "3" / "state")[-1].unlink()
    ck = Checkpointer(d, keep=3, async_save=False)
    state, _ = ck.restore(None, _state(0))
    assert int(state["step"]) == 2
    ck.save(3, _state(3), {"seed": 33})
    ck.wait()
    state, meta = ck.restore(None, _state(0))
    assert meta == {"seed": 33} and _same(state, _state(3))


def test_checkpoints_without_digests_still_restore(tmp_path):
    import orbax.checkpoint as ocp

    d = tmp_path / "old"
    mgr = ocp.CheckpointManager(d, options=ocp.CheckpointManagerOptions(create=True, enable_async_checkpointing=False),
                                item_names=("state", "meta"))
    mgr.save(1, args=ocp.args.Composite(state=ocp.args.StandardSave(_state(1)), meta=ocp.args.JsonSave({"seed": 1})))
    mgr.close()
    state, meta = Checkpointer(d, async_save=False).restore(None, _state(0))
    assert meta == {"seed": 1} and _same(state, _state(1))
    assert os.path.isdir(d / "1")


@pytest.mark.parametrize("as_train_state", [False, True])
def test_restore_params_verifies_digests_and_falls_back_like_restore(tmp_path, caplog, as_train_state):
    from orchestra_jax.train_step import TrainState

    def state(s):
        st = _state(s)
        return TrainState(st["params"], {}, st["step"], None) if as_train_state else st

    d = tmp_path / "ck"
    ck = Checkpointer(d, keep=3, async_save=False)
    for s in (1, 2, 3):
        ck.save(s, state(s), {"seed": s})
    ck.close()
    params, meta = Checkpointer(d, async_save=False).restore_params(None, _state(0)["params"])
    assert meta == {"seed": 3} and _same(params, _state(3)["params"])
    data = _files(d / "3" / "state")[-1]  # w_gate: readable, but its digest no longer matches
    with open(data, "r+b") as f:
        f.seek(data.stat().st_size // 2)
        f.write(bytes([0x41]) * 4096)
    ck = Checkpointer(d, async_save=False)
    with caplog.at_level(logging.WARNING, logger="orchestra_jax.checkpoint"):
        params, meta = ck.restore_params(None, _state(0)["params"])
    assert meta == {"seed": 2} and _same(params, _state(2)["params"]) and ck.damaged_steps == {3}
    (msg,) = [r.getMessage() for r in caplog.records]
    assert msg.startswith(f"checkpoint step 3 in {d} is damaged (") and msg.endswith("trying step 2")
    with pytest.raises(CheckpointError, match=r"checkpoint step 3 in .* is damaged: "):
        ck.restore_params(3, _state(0)["params"])
