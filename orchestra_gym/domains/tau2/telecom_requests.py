"""What the offline scripted user of tau2's telecom domain understands: agent requests -> user tools.

tau2's user simulator is an LLM that reads the agent's instructions and calls its own phone tools.
The scripted user (`orchestra_gym.users.ScriptedUser`) does the same with the table `user_requests`
gives it: natural requests ("turn off airplane mode", "restart your phone", "grant the messaging
app the storage permission", "set your network mode to 4G/5G preferred") or the tool's own name.
`request_text` is how the oracle (and anyone scripting an agent) asks for one user action.
"""

from __future__ import annotations

import re
from typing import Any

from orchestra_gym.domains.tau2.telecom_schemas import TELECOM_USER_TOOLS
from orchestra_gym.domains.tau2.telecom_user import APP_PERMISSIONS
from orchestra_gym.users import UserToolRequest

__all__ = ["user_requests", "request_text"]

_VERB = r"\b(?:turn(?:ing)?|switch(?:ing)?|toggl(?:e|ing)|enabl(?:e|ing)|disabl(?:e|ing)|activat(?:e|ing)|deactivat(?:e|ing)|put)\b"
_NEAR = r"(?:\s+[\w'-]+){0,5}\s+"
_MODE_WORDS = (("4g_5g_preferred", r"4g_5g_preferred|4g/5g|5g/4g|lte/5g|5g preferred|prefer(?:red)? 5g|4g or 5g"),
               ("4g_only", r"4g_only|4g only|lte only"), ("3g_only", r"3g_only|3g only"), ("2g_only", r"2g_only|2g only"))
_APPS = ("messaging", "browser")


def _mode_arguments(text: str) -> list[dict[str, Any]]:
    found = [(m.start(), mode) for mode, pattern in _MODE_WORDS for m in [re.search(pattern, text, re.I)] if m]
    return [{"mode": min(found)[1]}] if found else []


def _app_names(text: str) -> list[str]:
    named = [(m.start(), m.group(1).lower()) for m in re.finditer(r"\b([\w-]+)\s+app\b", text, re.I)
             if m.group(1).lower() not in ("the", "your", "an", "a", "this", "that", "default")]
    named += [(m.start(), a) for a in _APPS for m in [re.search(rf"\b{a}\b", text, re.I)] if m]
    out: list[str] = []
    for _, name in sorted(named):
        if name not in out:
            out.append(name)
    return out


def _app_arguments(text: str) -> list[dict[str, Any]]:
    apps = _app_names(text)
    return [{"app_name": apps[0]}] if apps else []


def _permission_arguments(text: str) -> list[dict[str, Any]]:
    apps = _app_names(text)
    if not apps:
        return []
    # permissions named in the sentences that speak of permissions, "your phone" is not one
    scope = " ".join(part for part in re.split(r"[.?!]", text) if re.search(r"permission", part, re.I))
    scope = re.sub(r"\b(?:your|the|my|this) phone\b", "", scope, flags=re.I)
    perms = sorted((m.start(), p) for p in APP_PERMISSIONS for m in [re.search(rf"\b{p}\b", scope, re.I)] if m)
    return [{"app_name": apps[0], "permission": p} for _, p in perms]


def _wants_on(text: str) -> bool | None:
    text = re.sub(r"\b(?:on|off) (?:your|the|my|this) (?:phone|device|screen|line|account)\b", "", text, flags=re.I)
    on = re.search(r"\b(?:on|enable|activate)\b", text, re.I)
    off = re.search(r"\b(?:off|disable|deactivate)\b", text, re.I)
    if bool(on) == bool(off):
        return None
    return bool(on)


def _toggle(tool_name: str, target: str) -> UserToolRequest:
    return UserToolRequest(tool_name, (_VERB + _NEAR + target, target + r"\s+(?:back\s+)?(?:on|off)\b"),
                           wants_on=_wants_on)


def user_requests() -> tuple[UserToolRequest, ...]:
    """The scripted user's vocabulary for its 30 telecom tools (`orchestra_gym.users.UserToolRequest`s).

    Requests are recognised by natural phrasing ("turn off airplane mode", "restart your phone",
    "grant the messaging app the storage permission", "set your network mode to 4G/5G
    preferred") or by naming the tool (```reseat_sim_card```), as `request_text` does.
    """
    R = UserToolRequest  # noqa: N806 - one letter keeps the table readable

    return (
        R("check_status_bar", (r"status bar",)),
        R("check_network_status", (r"network status", r"(?:check|look at)\b[^.?!]{0,30}\b(?:network|cellular) (?:connection|settings)")),
        R("check_network_mode_preference", (r"(?:check|what(?:'s| is))\b[^.?!]{0,30}\b(?:network mode|preferred network)",)),
        R("set_network_mode_preference", (r"\b(?:set|change|switch)\b[^.?!]{0,40}\b(?:network mode|preferred network|network type)",),
          arguments=_mode_arguments),
        R("run_speed_test", (r"speed ?test", r"test (?:your |the )?(?:internet |data )?speed")),
        R("toggle_airplane_mode", (_VERB + _NEAR + r"airplane mode", r"airplane mode\s+(?:back\s+)?(?:on|off)\b"),
          wants_on=_wants_on),
        R("check_sim_status", (r"sim (?:card )?status", r"\bcheck\b[^.?!]{0,20}\bsim\b")),
        R("reseat_sim_card", (r"\bre-?seat", r"\bre-?insert", r"(?:remove|take out|take)\b[^.?!]{0,30}\bsim\b[^.?!]{0,40}\bback\b")),
        _toggle("toggle_data", r"mobile data(?!\s*(?:saver|usage|roaming|limit|plan|refuel))"),
        _toggle("toggle_roaming", r"(?:data )?roaming"),
        R("check_data_restriction_status", (r"data restriction", r"(?:check|is)\b[^.?!]{0,20}\bdata saver\b(?!\s+(?:on|off))")),
        _toggle("toggle_data_saver_mode", r"data saver(?: mode)?"),
        R("check_apn_settings", (r"(?:check|look at|what are)\b[^.?!]{0,30}\bapn",)),
        R("set_apn_settings", (), arguments=lambda text: []),
        R("reset_apn_settings", (r"\breset\b[^.?!]{0,30}\bapn", r"\bapn\b[^.?!]{0,30}\breset\b")),
        R("check_wifi_status", (r"wi-?fi status", r"(?:check|is)\b[^.?!]{0,30}\bwi-?fi\b(?!\s*calling)")),
        _toggle("toggle_wifi", r"wi-?fi(?!\s*calling)"),
        R("check_wifi_calling_status", (r"wi-?fi calling status", r"(?:check|is)\b[^.?!]{0,30}\bwi-?fi calling\b(?!\s+(?:on|off))")),
        _toggle("toggle_wifi_calling", r"wi-?fi calling"),
        R("check_vpn_status", (r"vpn status", r"\bcheck\b[^.?!]{0,30}\bvpn\b")),
        R("connect_vpn", (r"\b(?:connect|turn on|enable)\b(?:\s+[\w'-]+){0,3}\s+vpn",)),
        R("disconnect_vpn", (r"\b(?:disconnect|turn off|disable)\b(?:\s+[\w'-]+){0,3}\s+vpn", r"\bvpn\b[^.?!]{0,20}\b(?:off|disconnect)")),
        R("check_installed_apps", (r"installed apps", r"apps (?:are )?installed", r"which apps")),
        R("check_app_status", (r"app status", r"status of (?:the |your )?[\w-]+ app"), arguments=_app_arguments),
        R("check_app_permissions", (r"(?:check|what)\b[^.?!]{0,40}\bpermissions?\b(?![^.?!]*\b(?:grant|give)\b)",),
          arguments=_app_arguments),
        R("grant_app_permission", (r"\b(?:grant|give|allow)\b[^.?!]{0,60}\bpermission", r"\benable\b[^.?!]{0,40}\bpermission"),
          arguments=_permission_arguments),
        R("can_send_mms", (r"\b(?:send|sending)\b[^.?!]{0,20}\b(?:mms|picture message)", r"\bmms\b[^.?!]{0,20}\bwork")),
        R("reboot_device", (r"\b(?:reboot|restart)\b",)),
        R("check_payment_request", (r"\b(?:check|see if|do you (?:have|see)|whether you (?:have|received?))\b"
                                    r"[^.?!]{0,30}\bpayment request",)),
        R("make_payment", (r"\b(?:make|complete|submit)\b[^.?!]{0,20}\bpayment\b", r"\bpay (?:the|your|it|this|that)\b")),
    )


_REQUEST_PHRASES = {
    "toggle_airplane_mode": "toggle airplane mode", "toggle_data": "toggle your mobile data",
    "toggle_roaming": "toggle data roaming", "toggle_data_saver_mode": "toggle Data Saver mode",
    "toggle_wifi": "toggle Wi-Fi", "toggle_wifi_calling": "toggle Wi-Fi Calling",
    "reboot_device": "restart your phone", "reseat_sim_card": "take out your SIM card and put it back in",
    "reset_apn_settings": "reset your APN settings", "connect_vpn": "connect your VPN",
    "disconnect_vpn": "disconnect your VPN", "make_payment": "make the payment for the bill I sent you",
    "set_network_mode_preference": "set your network mode preference to {mode}",
    "grant_app_permission": "grant the {app_name} app the {permission} permission",
    "check_app_status": "check the status of the {app_name} app",
    "check_app_permissions": "check which permissions the {app_name} app has",
}


def request_text(name: str, arguments: dict[str, Any]) -> str:
    """The message an agent sends to ask the user for one of their tool actions (used by the oracle).

    It names the action in words and the tool itself, e.g. ``Could you please toggle airplane mode
    (`toggle_airplane_mode`) and tell me what you see?``; the scripted user recognises both.

    Raises:
        ValueError: ``name`` is not a user tool (the message lists them).
    """
    if name not in TELECOM_USER_TOOLS:
        raise ValueError(f"{name!r} is not a telecom user tool; user tools: {list(TELECOM_USER_TOOLS)}")
    phrase = _REQUEST_PHRASES.get(name)
    if phrase is None:
        phrase = name.replace("_", " ")
    else:
        phrase = phrase.format(**{k: str(v) for k, v in arguments.items()})
    return f"Could you please {phrase} (`{name}`) and tell me what you see?"
