"""The training guard's decisions (plain Python over a step's metrics; no model)."""

from __future__ import annotations

import pytest

from orchestra_gym.errors import ConfigError
from orchestra_jax.guard import GuardConfig, GuardEvent, TrainingGuard

OK = {"valid_format_rate": 0.95, "episodes": 8, "cut": 0, "rollouts_kept": 8, "rollouts_total": 8, "entropy": 1.0}
BAD = {**OK, "valid_format_rate": 0.5}


def test_reasons_name_each_unhealthy_signal():
    g = TrainingGuard(GuardConfig(min_valid_format=0.8, max_cut_rate=0.25, min_kept_rollouts=0.5, min_entropy=0.1,
                                  max_entropy=3.0))
    assert g.reasons(OK) == ()
    assert g.reasons({}) == ()  # missing metrics are not judged
    assert g.reasons({**OK, "valid_format_rate": 0.74, "cut": 4, "rollouts_kept": 2, "entropy": 0.05}) == (
        "valid tool-call format 0.74 < 0.8", "cut rollouts 0.50 > 0.25", "kept rollouts 0.25 < 0.5",
        "entropy 0.050 < 0.1 nats")
    assert g.reasons({**OK, "entropy": 4.0}) == ("entropy 4.000 > 3 nats",)
    assert TrainingGuard(GuardConfig(max_entropy=0.0)).reasons({**OK, "entropy": 99.0}) == ()  # 0 disables


def test_patience_then_restore_newest_healthy_checkpoint_then_stop():
    g = TrainingGuard(GuardConfig(patience=2, max_restores=1, lr_factor=0.5))
    g.checkpointed(0)
    assert g.observe(1, OK).action == "ok"
    g.checkpointed(1)
    e = g.observe(2, BAD)
    assert (e.action, e.reasons) == ("ok", ("valid tool-call format 0.50 < 0.8",))  # within patience
    g.checkpointed(2)  # written at an unhealthy step: never a restore target
    e = g.observe(3, BAD)
    assert (e.action, e.restore_step, e.lr_scale) == ("restore", 1, 0.5)
    assert e.to_record() == {"phase": "guard", "step": 3, "action": "restore",
                             "reasons": ["valid tool-call format 0.50 < 0.8"], "restore_step": 1, "lr_scale": 0.5,
                             "message": "step 3: valid tool-call format 0.50 < 0.8; restoring the checkpoint of step 1 "
                                        "with the learning rate scaled to 0.5 (restore 1 of 1)"}
    assert g.observe(4, BAD).action == "ok" and g.bad_streak == 1  # the streak restarts after a restore
    e = g.observe(5, BAD)
    assert e.action == "stop" and e.restore_step is None
    assert e.message.startswith("GRPO stopped by the training guard at step 5: valid tool-call format 0.50 < 0.8 "
                                "for 2 steps in a row, and 1 restore(s) with the learning rate scaled to 0.5 did "
                                "not help. Fix: lower optimizer.learning_rate")


def test_rotated_away_checkpoints_are_no_target():
    g = TrainingGuard(GuardConfig(patience=1))
    for s in (0, 1):
        g.checkpointed(s)
    assert g.observe(2, BAD, available=[0, 2]).restore_step == 0
    g2 = TrainingGuard(GuardConfig(patience=1))
    g2.checkpointed(0)
    e = g2.observe(1, BAD, available=[1])
    assert e.action == "stop" and "no checkpoint written at a healthy step is left" in e.message


def test_max_restores_zero_stops_at_first_trigger_and_state_round_trips():
    g = TrainingGuard(GuardConfig(patience=1, max_restores=0))
    g.checkpointed(0)
    assert g.observe(1, BAD).action == "stop"
    g = TrainingGuard(GuardConfig(patience=3, max_restores=2, lr_factor=0.25))
    g.checkpointed(0)
    for s in (1, 2, 3):
        e = g.observe(s, BAD)
    assert e.action == "restore"
    g.observe(4, BAD)
    h = TrainingGuard(GuardConfig(patience=3, max_restores=2, lr_factor=0.25))
    h.load_state_dict(g.state_dict())
    assert h.state_dict() == g.state_dict() == {"restores": 1, "lr_scale": 0.25, "bad_streak": 1,
                                                "good_checkpoints": [0], "unhealthy": [1, 2, 3, 4]}
    h.checkpointed(4)  # unhealthy step: not a target
    assert h.state_dict()["good_checkpoints"] == [0]
    assert isinstance(GuardEvent("ok", 1), GuardEvent)


@pytest.mark.parametrize("field, value, text", [
    ("min_valid_format", 1.5, "guard.min_valid_format=1.5: must be in [0, 1]"),
    ("max_cut_rate", -0.1, "guard.max_cut_rate=-0.1"),
    ("patience", 0, "guard.patience=0: must be >= 1"),
    ("max_restores", -1, "guard.max_restores=-1"),
    ("lr_factor", 0.0, "guard.lr_factor=0.0: must be in (0, 1]"),
    ("min_entropy", -1.0, "guard.min_entropy=-1.0"),
])
def test_config_errors_name_the_key(field, value, text):
    with pytest.raises(ConfigError, match=text.replace("[", r"\[").replace("(", r"\(").replace(")", r"\)")):
        GuardConfig(**{field: value})
    with pytest.raises(ConfigError, match="guard.max_entropy"):
        GuardConfig(min_entropy=2.0, max_entropy=1.0)
