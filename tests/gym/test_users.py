"""The scripted user: opening, confirmations, known info, stop tokens."""

from orchestra_gym.users import STOP, ScriptedUser

SCENARIO = {"instructions": {"reason_for_call": "I want to cancel booking B12.", "known_info": "My name is Ada Lee.",
                             "unknown_info": "", "task_instructions": "Cancel B12."}}


def test_opening_has_reason_and_known_info():
    assert ScriptedUser(SCENARIO).opening() == "Hi! I want to cancel booking B12. My name is Ada Lee."


def test_replies():
    u = ScriptedUser(SCENARIO)
    assert u.reply("Shall I proceed with the cancellation? (yes/no)").text == "Yes, please go ahead."
    assert u.reply("What is your full name?").text == "Sure. My name is Ada Lee."
    r = u.reply("Done: refund 12.50 USD. Is there anything else I can help you with?")
    assert r.stop and STOP in r.text


def test_idle_agent_is_stopped():
    u = ScriptedUser(SCENARIO, max_repeats=2)
    assert not u.reply("Working on it.").stop
    assert u.reply("Still working.").stop
