"""The tau2 ``telecom`` domain, user side: the user's phone and surroundings and their 30 tools.

In tau2's telecom domain the user acts on their own device (toggle airplane mode, reseat the SIM,
grant an app a permission, pay a bill the agent sent...). This module reimplements tau2-bench
v0.2.0's user database (``TelecomUserDB``: ``device`` + ``surroundings``) and user toolkit
(``TelecomUserTools``), checked against ``tau2_reference/telecom``.

User database: ``user_db.toml`` normalised to tau2's models (field order and defaults; enum values
as their strings). ``surroundings`` (absent from the file) gets its defaults; tasks fill in the
user's name and phone number with ``set_user_info``.

Behaviour matched to tau2-bench v0.2.0, including:

1. Most failures are messages, not errors (``"Failed to set network mode: ..."``,
   ``"Error. Permission 'camera' not tracked ..."``, ``"App 'camera' not found on this phone."``).
2. QUIRK ``set_network_mode_preference`` with a non-string and ``set_apn_settings`` with a non-dict
   store the value unvalidated, then fail on it (``'int' object has no attribute 'value'``): an
   error, yet the user database changed; later reads of that value fail the same way.
3. A network search (reboot, airplane mode, SIM, data/roaming toggles, APN or network-mode changes)
   recomputes signal and technology from the surroundings: the pristine phone shows ``good`` on 5G,
   after any search ``excellent`` (speed test 220.00 -> 275.00 Mbps).
4. ``check_vpn_status`` prints the details dict with Python reprs, the performance as tau2's enum
   repr (``<PerformanceLevel.EXCELLENT: 'excellent'>``).
5. QUIRK not reproduced on purpose: in tau2, ``connect_vpn`` assigns one class-level ``VpnDetails``
   object and ``break_vpn`` degrades it in place, so within one Python process every later
   ``connect_vpn`` shows ``poor``. Here every environment starts from the pristine default (what
   tau2 shows in a fresh process); the gold replays do not depend on it.
6. The data saver cuts the speed test to 20% (tau2's code; its docstring says 50%).
"""

from __future__ import annotations

from typing import Any

from orchestra_gym.domains.tau2.db import ANY, FLOAT, Schema, copy_json, dict_of, model
from orchestra_gym.domains.tau2.telecom_schemas import TELECOM_USER_TOOLS
from orchestra_gym.domains.tau2.toolkit import ModelValidationError, Tau2Toolkit, tool

__all__ = ["TelecomUserTools", "TELECOM_USER_TABLES", "NETWORK_MODES", "APP_PERMISSIONS"]

NETWORK_MODES = ("4g_5g_preferred", "4g_only", "3g_only", "2g_only")
APP_PERMISSIONS = ("sms", "storage", "phone", "network")
_APN_NAMES = ("internet", "broken")
_PERFORMANCE = ("unknown", "poor", "fair", "good", "excellent")

_PERMISSIONS = model(*[(p, ANY, False) for p in APP_PERMISSIONS])
_APN_FIELDS = (("apn_name", "internet"), ("reset_at_reboot", False), ("mms_apn", "mms"),
               ("mmsc_url", "http://mms.carrier.com/mms/wapenc"), ("mms_proxy", None), ("mms_port", None))
_APN = model(*[(name, ANY, default) for name, default in _APN_FIELDS])
_DEFAULT_APPS = {
    "messaging": {"app_name": "messaging", "permissions": {"sms": True, "storage": True, "phone": True, "network": False}},
    "browser": {"app_name": "browser", "permissions": {"sms": False, "storage": True, "phone": False, "network": True}},
}
_DEFAULT_VPN = {"server_address": "192.168.1.1", "protocol": "OpenVPN", "server_performance": "excellent"}

#: tau2 ``TelecomUserDB``: the two top-level models with their field order and defaults.
TELECOM_USER_TABLES: dict[str, Schema] = {
    "device": model(
        ("sim_card_status", ANY, "active"), ("sim_card_missing", ANY, False), ("airplane_mode", ANY, False),
        ("network_signal_strength", ANY, "good"), ("network_technology_connected", ANY, "5G"),
        ("network_connection_status", ANY, "connected"), ("battery_level", ANY, 80), ("data_enabled", ANY, True),
        ("roaming_enabled", ANY, False), ("network_mode_preference", ANY, "4g_5g_preferred"),
        ("active_apn_settings", _APN, _APN.normalise({})), ("wifi_enabled", ANY, False),
        ("wifi_connected", ANY, False), ("wifi_ssid", ANY, None), ("wifi_signal_strength", ANY, "none"),
        ("wifi_calling_enabled", ANY, False), ("wifi_calling_mms_over_wifi", ANY, False),
        ("data_saver_mode", ANY, False), ("vpn_enabled_setting", ANY, False), ("vpn_connected", ANY, False),
        ("vpn_details", model(("server_address", ANY, None), ("protocol", ANY, None),
                              ("server_performance", ANY, "unknown")), None),
        ("app_statuses", dict_of(model(("app_name", ANY), ("permissions", _PERMISSIONS, _PERMISSIONS.normalise({})))),
         _DEFAULT_APPS),
    ),
    "surroundings": model(
        ("name", ANY, None), ("phone_number", ANY, None), ("is_abroad", ANY, False), ("roaming_allowed", ANY, False),
        ("signal_strength", ANY, {"2G": "poor", "3G": "fair", "4G": "good", "5G": "excellent"}),
        ("mobile_data_usage_exceeded", ANY, False), ("line_active", ANY, True),
        ("payment_request", model(("bill_id", ANY), ("amount_due", FLOAT), ("paid", ANY, False)), None),
    ),
}

_SIGNAL_ICONS = {"none": "📵 No Signal", "poor": "📶¹ Poor", "fair": "📶² Fair", "good": "📶³ Good",
                 "excellent": "📶⁴ Excellent"}
_SPEED_RANGE = {"2G": (0.1, 0.4), "3G": (1.0, 5.0), "4G": (10.0, 100.0), "5G": (50.0, 500.0), "none": (0.0, 0.0)}
_SIGNAL_FACTOR = {"poor": 0.2, "fair": 0.5, "good": 0.8, "excellent": 1.0, "none": 0.0}
_SPEED_BANDS = ((1, "Very Poor", "Connection is very slow. Basic web browsing might be difficult."),
                (5, "Poor", "Connection is slow. Web browsing may be sluggish, streaming difficult."),
                (25, "Fair", "Connection is okay for web browsing and some standard definition streaming."),
                (100, "Good", "Connection is good for most activities, including HD streaming."),
                (float("inf"), "Excellent", "Connection is very fast."))
_SIM_TEXT = {"active": "Your SIM card is active and working.", "missing": "No SIM card detected in the phone.",
             "locked_pin": "The SIM card is locked with a PIN code.",
             "locked_puk": "The SIM card is locked with a PUK code."}
_PYDANTIC = "    For further information visit https://errors.pydantic.dev/2.14/v/"


def _enum_value(x: Any) -> str:
    """``x.value`` of a stored enum: our enums are their strings; anything else fails as in tau2 (QUIRK 2)."""
    if isinstance(x, str):
        return x
    raise AttributeError(f"'{type(x).__name__}' object has no attribute 'value'")


def _attr(obj: Any, name: str) -> Any:
    """``obj.name`` of a stored model (a dict); a corrupted value fails with Python's message (QUIRK 2)."""
    if not isinstance(obj, dict):
        raise AttributeError(f"'{type(obj).__name__}' object has no attribute '{name}'")
    return obj[name]


class _PerformanceRepr(str):
    """A performance level that prints as tau2's enum repr inside a dict repr (QUIRK 4)."""

    def __repr__(self) -> str:
        return f"<PerformanceLevel.{self.upper()}: '{self}'>"


def _apn_from_dict(values: dict[str, Any]) -> dict[str, Any]:
    """Validate ``APNSettings(**values)`` as tau2's pydantic model does (strict extra, enum name, lax types).

    Raises:
        TypeError: a non-string key (Python's keyword-argument error).
        ModelValidationError: with pydantic 2.14's message text.
    """
    for key in values:
        if not isinstance(key, str):
            raise TypeError("keywords must be strings")
    errors: list[tuple[str, str, str, Any]] = []
    out = {}
    for name, default in _APN_FIELDS:
        if name not in values:
            out[name] = default
            continue
        v = values[name]
        if name == "apn_name":
            if v not in _APN_NAMES or not isinstance(v, str):
                errors.append((name, "Input should be 'internet' or 'broken'", "enum", v))
            out[name] = v
        elif name == "reset_at_reboot":
            lax = {True: True, False: False, 1: True, 0: False, "true": True, "false": False, "1": True, "0": False,
                   "yes": True, "no": False, "on": True, "off": False, "t": True, "f": False, "y": True, "n": False}
            key = v.lower() if isinstance(v, str) else v
            if isinstance(v, (bool, int, str)) and not isinstance(v, float) and key in lax:
                out[name] = lax[key]
            else:
                errors.append((name, "Input should be a valid boolean", "bool_type" if not isinstance(v, str)
                               else "bool_parsing", v))
        elif name == "mms_port":
            if v is None or (isinstance(v, int) and not isinstance(v, bool)):
                out[name] = v
            elif isinstance(v, float) and v.is_integer():
                out[name] = int(v)
            elif isinstance(v, str) and v.strip().lstrip("+-").isdigit():
                out[name] = int(v)
            else:
                errors.append((name, "Input should be a valid integer", "int_type", v))
        else:
            if v is None or isinstance(v, str):
                out[name] = v
            else:
                errors.append((name, "Input should be a valid string", "string_type", v))
    for key, v in values.items():
        if key not in out and key not in [e[0] for e in errors]:
            errors.append((key, "Extra inputs are not permitted", "extra_forbidden", v))
    if errors:
        lines = [f"{len(errors)} validation error{'s' if len(errors) > 1 else ''} for APNSettings"]
        for name, text, kind, v in errors:
            lines += [name, f"  {text} [type={kind}, input_value={v!r}, input_type={type(v).__name__}]",
                      _PYDANTIC + kind]
        raise ModelValidationError("\n".join(lines))
    return out


class TelecomUserTools(Tau2Toolkit):
    """The user's own tools in tau2's ``telecom`` domain (class name as in tau2, used in argument-error texts).

    The database is a `CowDB` with two top-level models, ``device`` and ``surroundings``; the
    first write to either copies it for the episode (`own`); `part` reads one.
    """

    SCHEMAS = TELECOM_USER_TOOLS

    # -- storage --------------------------------------------------------------------------------
    def part(self, name: str) -> dict[str, Any]:
        """``device`` or ``surroundings`` as it is now (read-only)."""
        own = self.db.scalars.get(name)
        return own if own is not None else self.db.snapshot.tables[name]

    def own(self, name: str) -> dict[str, Any]:
        """The episode's own, writable copy of ``device`` or ``surroundings`` (copied on the first write)."""
        if name not in self.db.scalars:
            self.db.scalars[name] = copy_json(self.db.snapshot.tables[name])
        return self.db.scalars[name]

    @property
    def device(self) -> dict[str, Any]:
        """The phone's state (read-only view)."""
        return self.part("device")

    @property
    def surroundings(self) -> dict[str, Any]:
        """Where the user is and what the carrier allows (read-only view)."""
        return self.part("surroundings")

    def _set(self, part: str, **values: Any) -> None:
        """Write fields of ``device`` or ``surroundings`` (copying it only when a value changes)."""
        cur = self.part(part)
        changed = {k: v for k, v in values.items() if k not in cur or type(cur[k]) is not type(v) or cur[k] != v}
        if changed:
            self.own(part).update(changed)

    def set_surroundings(self, **values: Any) -> None:
        """Write ``surroundings`` fields (used by the environment's sync)."""
        self._set("surroundings", **values)

    def _radio_off(self) -> None:
        self._set("device", network_connection_status="no_service", network_technology_connected="none",
                  network_signal_strength="none")

    # -- user info (task set-up, not tools) -----------------------------------------------------
    def set_user_info(self, name: str, phone_number: str) -> None:
        """Set the user's name and phone number (links the phone to a line: sync starts)."""
        self._set("surroundings", name=name, phone_number=phone_number)

    def set_user_location(self, abroad: bool) -> None:
        """Put the user abroad (True) or at home."""
        self._set("surroundings", is_abroad=abroad)

    # -- status bar and network -----------------------------------------------------------------
    def _status_bar(self) -> str:
        d = self.device
        parts = []
        if d["airplane_mode"]:
            parts.append("✈️ Airplane Mode")
        else:
            parts.append(_SIGNAL_ICONS.get(d["network_signal_strength"], "📵 No Signal"))
            tech = d["network_technology_connected"]
            if tech != "none":
                parts.append(_enum_value(tech))
            if d["data_enabled"] and tech != "none":
                parts.append("📱 Data Enabled")
                if d["data_saver_mode"]:
                    parts.append("🔽 Data Saver")
            else:
                parts.append("📵 Data Disabled")
        if d["wifi_enabled"] and d["wifi_connected"]:
            parts.append(f"📡 Connected to {d['wifi_ssid']}" if d["wifi_ssid"] else "📡 Enabled")
        if d["vpn_connected"]:
            parts.append("🔒 VPN Connected")
        parts.append(f"🔋 {d['battery_level']}%")
        return " | ".join(parts)

    def _with_bar(self, text: str) -> str:
        return f"{text}\nStatus Bar: {self._status_bar()}"

    @tool("READ")
    def check_status_bar(self) -> str:
        """The icons of the status bar (signal, technology, data, Wi-Fi, VPN, battery)."""
        return f"Status Bar: {self._status_bar()}"

    def _sim_status(self) -> str:
        d = self.device
        return "missing" if d["sim_card_missing"] else d["sim_card_status"]

    @tool("READ")
    def check_network_status(self) -> str:
        """Airplane mode, SIM, connection, signal, technology, data, roaming and Wi-Fi, one per line."""
        d = self.device
        lines = [
            f"Airplane Mode: {'ON' if d['airplane_mode'] else 'OFF'}",
            f"SIM Card Status: {_enum_value(self._sim_status())}",
            f"Cellular Connection: {_enum_value(d['network_connection_status'])}",
            f"Cellular Signal: {_enum_value(d['network_signal_strength'])}",
            f"Cellular Network Type: {_enum_value(d['network_technology_connected'])}",
            f"Mobile Data Enabled: {'Yes' if d['data_enabled'] else 'No'}",
            f"Data Roaming Enabled: {'Yes' if d['roaming_enabled'] else 'No'}",
            f"Wi-Fi Radio: {'ON' if d['wifi_enabled'] else 'OFF'}",
            f"Wi-Fi Connected: {'Yes' if d['wifi_connected'] else 'No'}",
        ]
        if d["wifi_connected"]:
            lines.append(f"Connected Wi-Fi Network: {d['wifi_ssid']}")
        return "\n".join(lines)

    @tool("READ")
    def check_network_mode_preference(self) -> str:
        """The preferred network mode (e.g. ``4g_5g_preferred``)."""
        return f"Network Mode Preference: {_enum_value(self.device['network_mode_preference'])}"

    @tool("WRITE")
    def set_network_mode_preference(self, mode: str) -> str:
        """Set the preferred network mode (one of `NETWORK_MODES`) and search again (QUIRK 2 for non-strings)."""
        if isinstance(mode, str):
            if mode not in NETWORK_MODES:
                return self._with_bar(f"Failed to set network mode: '{mode}' is not a valid option. Please use one "
                                      f"of: {', '.join(NETWORK_MODES)}")
        self._set("device", network_mode_preference=mode)
        self.simulate_network_search()
        return self._with_bar(f"Preferred Network Mode set to: {_enum_value(mode)}")

    def _mobile_data_working(self) -> bool:
        d, s = self.device, self.surroundings
        if d["airplane_mode"] or d["network_signal_strength"] == "none":
            return False
        if d["network_connection_status"] == "no_service":
            return False
        if s["is_abroad"] and (not d["roaming_enabled"] or not s["roaming_allowed"]):
            return False
        return bool(d["data_enabled"]) and not s["mobile_data_usage_exceeded"]

    def _speed(self) -> tuple[float | None, str]:
        """(Mbps rounded to 0.01, band) of a speed test, or (None, "No Connection")."""
        if not self._mobile_data_working():
            return None, "No Connection"
        d = self.device
        vpn = d["vpn_details"]
        factor = 0.1 if d["vpn_connected"] and vpn and vpn["server_performance"] == "poor" else 1.0
        if d["data_saver_mode"]:
            factor *= 0.2
        low, high = _SPEED_RANGE.get(d["network_technology_connected"], (0.0, 0.0))
        speed = round((low + high) / 2.0 * _SIGNAL_FACTOR.get(d["network_signal_strength"], 0.0) * factor, 2)
        return speed, next(name for limit, name, _ in _SPEED_BANDS if speed < limit)

    @tool("READ")
    def run_speed_test(self) -> str:
        """Download speed in Mbps with a band (Very Poor .. Excellent) and advice, or why it failed."""
        speed, band = self._speed()
        if speed is None:
            return f"Speed test failed: {band or 'Could not determine speed'}."
        advice = next(text for _, name, text in _SPEED_BANDS if name == band)
        return f"Speed Test Result: {speed:.2f} Mbps ({band}). {advice}"

    # -- airplane mode ---------------------------------------------------------------------------
    def _toggle_airplane(self) -> bool:
        d = self.device
        was_on = d["airplane_mode"]
        self._set("device", airplane_mode=not was_on)
        if was_on:
            self._set("device", network_connection_status="searching")
            if d["wifi_enabled"]:
                self._set("device", wifi_connected=False, wifi_ssid=None, wifi_signal_strength="none")
        else:
            self._set("device", wifi_connected=False, wifi_ssid=None, wifi_signal_strength="none")
            if self.device["vpn_connected"]:
                self._disconnect_vpn()
        self.simulate_network_search()
        return self.device["airplane_mode"]

    @tool("WRITE")
    def toggle_airplane_mode(self) -> str:
        """Switch airplane mode; turning it on drops Wi-Fi and the VPN."""
        on = self._toggle_airplane()
        return self._with_bar(f"Airplane Mode is now {'ON' if on else 'OFF'}.")

    def turn_airplane_mode_on(self) -> str:
        """Airplane mode on (task set-up)."""
        if not self._toggle_airplane():
            self._toggle_airplane()
        return "Airplane Mode is now ON."

    def turn_airplane_mode_off(self) -> str:
        """Airplane mode off (task set-up)."""
        if self._toggle_airplane():
            self._toggle_airplane()
        return "Airplane Mode is now OFF."

    # -- SIM ------------------------------------------------------------------------------------
    @tool("READ")
    def check_sim_status(self) -> str:
        """Whether the SIM is active, missing or locked (PIN / PUK)."""
        status = self._sim_status()
        return _SIM_TEXT.get(status) or f"Unknown SIM status: {_enum_value(status)}"

    @tool("WRITE")
    def reseat_sim_card(self) -> str:
        """Take the SIM out and put it back (fixes a missing SIM), then search."""
        self._set("device", sim_card_missing=False)
        self.simulate_network_search()
        return self._with_bar("SIM card re-seated successfully.")

    def unseat_sim_card(self) -> str:
        """Remove the SIM (task set-up; fixed by `reseat_sim_card`)."""
        self._set("device", sim_card_missing=True)
        self.simulate_network_search()
        return "SIM card un-seated successfully."

    def lock_sim_card(self, mode: str) -> str:
        """Lock the SIM with a PIN (``"pin"``) or PUK (``"puk"``); no tool fixes it (task set-up)."""
        if mode in ("pin", "puk"):
            self._set("device", sim_card_status=f"locked_{mode}")
        self.simulate_network_search()
        return f"SIM card locked successfully in {mode} mode."

    # -- mobile data and roaming ----------------------------------------------------------------
    def _flip(self, field: str, search: bool) -> bool:
        new = not self.device[field]
        self._set("device", **{field: new})
        if search:
            self.simulate_network_search()
        return new

    @tool("WRITE")
    def toggle_data(self) -> str:
        """Switch mobile data, then search."""
        return self._with_bar(f"Mobile Data is now {'ON' if self._flip('data_enabled', True) else 'OFF'}.")

    def turn_data_on(self) -> str:
        """Mobile data on, without a network search (task set-up)."""
        self._set("device", data_enabled=True)
        return "Data connection restored."

    def turn_data_off(self) -> str:
        """Mobile data off (task set-up)."""
        if self._flip("data_enabled", True):
            self._flip("data_enabled", True)
        return "Data connection broken."

    @tool("WRITE")
    def toggle_roaming(self) -> str:
        """Switch data roaming on the phone, then search."""
        return self._with_bar(f"Data Roaming is now {'ON' if self._flip('roaming_enabled', True) else 'OFF'}.")

    def turn_roaming_on(self) -> str:
        """Data roaming on (task set-up)."""
        if not self._flip("roaming_enabled", True):
            self._flip("roaming_enabled", True)
        return "Data Roaming is now ON."

    def turn_roaming_off(self) -> str:
        """Data roaming off (task set-up)."""
        if self._flip("roaming_enabled", True):
            self._flip("roaming_enabled", True)
        return "Data Roaming is now OFF."

    @tool("READ")
    def check_data_restriction_status(self) -> str:
        """Whether Data Saver is on."""
        return "Data Saver mode is ON (limits data usage)." if self.device["data_saver_mode"] else "Data Saver mode is OFF."

    @tool("WRITE")
    def toggle_data_saver_mode(self) -> str:
        """Switch Data Saver (no network search)."""
        return self._with_bar(f"Data Saver Mode is now {'ON' if self._flip('data_saver_mode', False) else 'OFF'}.")

    def turn_data_saver_mode_on(self) -> str:
        """Data Saver on (task set-up)."""
        if not self._flip("data_saver_mode", False):
            self._flip("data_saver_mode", False)
        return "Data Saver Mode is now ON."

    def turn_data_saver_mode_off(self) -> str:
        """Data Saver off (task set-up)."""
        if self._flip("data_saver_mode", False):
            self._flip("data_saver_mode", False)
        return "Data Saver Mode is now OFF."

    # -- APN ------------------------------------------------------------------------------------
    def _apn(self, attribute: str) -> dict[str, Any]:
        """The APN settings record; a corrupted value fails on ``attribute`` as in tau2 (QUIRK 2)."""
        apn = self.device["active_apn_settings"]
        if not isinstance(apn, dict):
            _attr(apn, attribute)
        return apn

    def _edit_apn(self, attribute: str, value: Any) -> None:
        self._apn(attribute)
        self.own("device")["active_apn_settings"][attribute] = value

    @tool("READ")
    def check_apn_settings(self) -> str:
        """The APN name and MMSC URL."""
        apn = self._apn("model_copy")
        return (f"Current APN Name: {_enum_value(apn['apn_name']) or 'Not Set'}\nMMSC URL (for picture messages): "
                f"{apn['mmsc_url'] or 'Not Set'}\n(These are technical settings, usually best left unchanged.)")

    @tool("WRITE")
    def set_apn_settings(self, apn_settings: dict) -> str:
        """Replace the APN settings (validated as tau2's ``APNSettings``; QUIRK 2 for a non-dict), then search."""
        if isinstance(apn_settings, dict):
            apn_settings = _apn_from_dict(apn_settings)
        self.own("device")["active_apn_settings"] = apn_settings
        text = f"APN settings set to: {_enum_value(_attr(apn_settings, 'apn_name'))}"
        self.simulate_network_search()
        return self._with_bar(text)

    @tool("WRITE")
    def reset_apn_settings(self) -> str:
        """Mark the APN settings for reset at the next reboot, then search."""
        self._edit_apn("reset_at_reboot", True)
        self.simulate_network_search()
        return self._with_bar("APN settings will reset at reboot.")

    def break_apn_settings(self) -> str:
        """Set a broken APN (no service; fixed by reset + reboot; task set-up)."""
        self._edit_apn("apn_name", "broken")
        self.simulate_network_search()
        return "APN settings broken. Please call reset_apn_settings() to fix."

    def break_apn_mms_setting(self) -> str:
        """Clear the MMSC URL (no MMS; fixed by reset + reboot; task set-up)."""
        self._edit_apn("mmsc_url", None)
        return "APN MMS setting broken. Please call reset_apn_settings() to fix."

    # -- Wi-Fi and Wi-Fi calling ----------------------------------------------------------------
    @tool("READ")
    def check_wifi_status(self) -> str:
        """Whether Wi-Fi is on and connected (network and signal)."""
        d = self.device
        if not d["wifi_enabled"]:
            return "Wi-Fi is turned OFF."
        if d["wifi_connected"]:
            return (f"Wi-Fi is ON and connected to '{d['wifi_ssid']}'. Signal strength: "
                    f"{_enum_value(d['wifi_signal_strength'])}.")
        return "Wi-Fi is ON but not connected to any network."

    @tool("WRITE")
    def toggle_wifi(self) -> str:
        """Switch the Wi-Fi radio (refused in airplane mode)."""
        if self.device["airplane_mode"]:
            return self._with_bar("Cannot change Wi-Fi settings while Airplane Mode is ON.")
        new = self._flip("wifi_enabled", False)
        if not new:
            self._set("device", wifi_connected=False, wifi_ssid=None, wifi_signal_strength="none")
        return self._with_bar(f"Wi-Fi is now {'ON' if new else 'OFF'}.")

    @tool("READ")
    def check_wifi_calling_status(self) -> str:
        """Whether Wi-Fi Calling is on."""
        return f"Wi-Fi Calling is currently turned {'ON' if self.device['wifi_calling_enabled'] else 'OFF'}."

    @tool("WRITE")
    def toggle_wifi_calling(self) -> str:
        """Switch Wi-Fi Calling."""
        return self._with_bar(f"Wi-Fi Calling is now {'ON' if self._flip('wifi_calling_enabled', False) else 'OFF'}.")

    def set_wifi_calling(self, enabled: bool, mms_over_wifi: bool | None = None) -> str:
        """Set Wi-Fi Calling and, when given, MMS over Wi-Fi (task set-up)."""
        if self.device["wifi_calling_enabled"] != enabled:
            self._flip("wifi_calling_enabled", False)
        msg = f"Wi-Fi Calling is now {'ON' if enabled else 'OFF'}."
        if mms_over_wifi is not None:
            self._set("device", wifi_calling_mms_over_wifi=mms_over_wifi)
            msg += f"\nMMS over Wi-Fi is now {'ON' if mms_over_wifi else 'OFF'}."
        return msg

    # -- VPN ------------------------------------------------------------------------------------
    @tool("READ")
    def check_vpn_status(self) -> str:
        """Whether a VPN is connected, with its details (QUIRK 4)."""
        d = self.device
        if d["vpn_connected"]:
            details = d["vpn_details"]
            if details:
                shown = dict(details)
                if isinstance(shown.get("server_performance"), str) and shown["server_performance"] in _PERFORMANCE:
                    shown["server_performance"] = _PerformanceRepr(shown["server_performance"])
                return f"VPN is ON and connected. Details: {shown}"
            return "VPN is ON and connected (no specific details available)."
        if d["vpn_enabled_setting"]:
            return "VPN is turned ON in settings, but currently not connected."
        return "VPN is turned OFF."

    @tool("WRITE")
    def connect_vpn(self) -> str:
        """Connect the VPN with the default server (QUIRK 5)."""
        if self.device["vpn_connected"]:
            return "VPN already connected."
        self._set("device", vpn_connected=True, vpn_details=dict(_DEFAULT_VPN))
        return self._with_bar("VPN connected successfully.")

    def _disconnect_vpn(self) -> bool:
        if not self.device["vpn_connected"]:
            return False
        self._set("device", vpn_connected=False, vpn_details=None)
        return True

    @tool("WRITE")
    def disconnect_vpn(self) -> str:
        """Disconnect the VPN."""
        done = self._disconnect_vpn()
        return self._with_bar("VPN disconnected successfully." if done else "No active VPN connection to disconnect.")

    def break_vpn(self) -> str:
        """Connect a VPN with a poor server (slow data; task set-up)."""
        self.connect_vpn()
        details = self.device["vpn_details"]
        _attr(details, "server_performance")
        self.own("device")["vpn_details"]["server_performance"] = "poor"
        return "VPN connection broken."

    # -- apps -----------------------------------------------------------------------------------
    @tool("READ")
    def check_installed_apps(self) -> str:
        """The installed apps' names."""
        return f"The following apps are installed on the phone: {', '.join(self.device['app_statuses'])}"

    def _granted(self, app: dict[str, Any]) -> list[str]:
        return [name.replace("_", " ").lower() for name, on in app["permissions"].items() if on]

    @tool("READ")
    def check_app_status(self, app_name: str) -> str:
        """An app's granted permissions, one per line."""
        app = self.device["app_statuses"].get(app_name)
        if not app:
            return f"App '{app_name}' not found on this phone."
        granted = self._granted(app)
        lines = [f"Status for App: {app_name}"]
        lines += [" - Permissions Granted:", *(f"   - {p}" for p in granted)] if granted else [" - Permissions: None granted."]
        return "\n".join(lines)

    @tool("READ")
    def check_app_permissions(self, app_name: str) -> str:
        """An app's granted permissions in one sentence."""
        app = self.device["app_statuses"].get(app_name)
        if not app:
            return f"App '{app_name}' not found on this phone."
        granted = self._granted(app)
        if not granted:
            return f"App '{app_name}' currently has no permissions granted."
        return f"App '{app_name}' has permission for: {', '.join(granted)}."

    @tool("WRITE")
    def grant_app_permission(self, app_name: str, permission: str) -> str:
        """Grant an app a permission (lower-cased; one of `APP_PERMISSIONS`)."""
        app = self.device["app_statuses"].get(app_name)
        permission = permission.lower()
        if not app:
            return self._with_bar(f"Error. App '{app_name}' not found. Cannot grant permission.")
        available = list(app["permissions"])
        if permission not in available:
            return self._with_bar(f"Error. Permission '{permission}' not tracked for app '{app_name}', available "
                                  f"permissions: {available}")
        self.own("device")["app_statuses"][app_name]["permissions"][permission] = True
        return self._with_bar(f"Success. Permission '{permission}' granted to app '{app_name}'.")

    def remove_app_permission(self, app_name: str, permission: str) -> tuple[bool, str]:
        """Revoke an app's permission (task set-up); returns (done, message) as tau2 does."""
        app = self.device["app_statuses"].get(app_name)
        permission = permission.lower()
        if not app:
            return False, f"App '{app_name}' not found. Cannot remove permission."
        if permission not in app["permissions"]:  # tau2 checks hasattr(): model method names pass there, then fail
            return False, f"Permission '{permission}' not tracked for app '{app_name}'."
        self.own("device")["app_statuses"][app_name]["permissions"][permission] = False
        return True, f"Permission '{permission}' removed from app '{app_name}'."

    # -- MMS ------------------------------------------------------------------------------------
    def _can_send_mms(self) -> bool:
        d = self.device
        if not self._mobile_data_working() or d["network_technology_connected"] == "2G":
            return False
        if d["wifi_calling_enabled"] and d["wifi_calling_mms_over_wifi"]:
            return False
        if self._apn("mmsc_url")["mmsc_url"] is None:
            return False
        app = d["app_statuses"].get("messaging")
        return bool(app is not None and app["permissions"]["storage"] and app["permissions"]["sms"])

    @tool("READ")
    def can_send_mms(self) -> str:
        """Whether the messaging app can send MMS (data, 3G or better, MMSC URL, permissions)."""
        if self._can_send_mms():
            return "Your messaging app can send MMS messages."
        return "Your messaging app cannot send MMS messages."

    # -- device ---------------------------------------------------------------------------------
    @tool("WRITE")
    def reboot_device(self) -> str:
        """Restart the phone: apply a pending APN reset, then search."""
        lines = []
        if self._apn("reset_at_reboot")["reset_at_reboot"]:
            lines.append("Resetting APN settings...")
            self.own("device")["active_apn_settings"] = _APN.normalise({})
        lines.append("Restarting network services...")
        self._set("device", network_connection_status="searching")
        self.simulate_network_search()
        return self._with_bar("\n".join(lines))

    def simulate_network_search(self) -> None:
        """Re-derive connection, technology and signal from SIM, mode, surroundings, airplane, APN and line."""
        d, s = self.device, self.surroundings
        if self._sim_status() == "active":
            signal = s["signal_strength"]
            pref = d["network_mode_preference"]
            tech = {"4g_only": "4G", "3g_only": "3G", "2g_only": "2G"}.get(pref, "4G") if isinstance(pref, str) else "4G"
            if pref == "4g_5g_preferred" and signal.get("5G", "none") != "none":
                tech = "5G"
            self._set("device", network_connection_status="connected", network_technology_connected=tech,
                      network_signal_strength=signal.get(tech, "none"))
        else:
            self._radio_off()
        broken_apn = self._apn("apn_name")["apn_name"] == "broken"
        if d["airplane_mode"] or broken_apn or not s["line_active"]:
            self._radio_off()

    # -- payments -------------------------------------------------------------------------------
    @tool("READ")
    def check_payment_request(self) -> str:
        """The bill and amount the agent asked the user to pay, if any."""
        request = self.surroundings["payment_request"]
        if request is None:
            return "No payment request has been made."
        return f"You have a payment request for bill {request['bill_id']} of {request['amount_due']} USD."

    @tool("WRITE")
    def make_payment(self) -> str:
        """Pay the requested bill (the environment's sync then marks the bill paid)."""
        request = self.surroundings["payment_request"]
        if request is None:
            return "You do not have a payment request."
        self.own("surroundings")["payment_request"]["paid"] = True
        return f"Payment of {request['amount_due']} USD has been made for bill {request['bill_id']}."

    # -- env-assertion helpers (not tools) ------------------------------------------------------
    def assert_airplane_mode_status(self, expected_status: bool) -> bool:
        """Airplane mode equals ``expected_status``."""
        return self.device["airplane_mode"] == expected_status

    def assert_service_status(self, expected_status: str) -> bool:
        """Connection status equals ``expected_status`` (``connected``, ``searching``, ``no_service``,
        ``emergency_only``; another value raises ValueError as tau2's enum does)."""
        valid = ("connected", "searching", "no_service", "emergency_only")
        if expected_status not in valid:
            raise ValueError(f"{expected_status!r} is not a valid NetworkStatus")
        return self.device["network_connection_status"] == expected_status

    def assert_mobile_data_status(self, expected_status: bool) -> bool:
        """Whether mobile data works equals ``expected_status``."""
        return self._mobile_data_working() == expected_status

    def assert_mobile_roaming_status(self, expected_status: bool) -> bool:
        """The phone's roaming switch equals ``expected_status``."""
        return self.device["roaming_enabled"] == expected_status

    def assert_mobile_data_saver_mode_status(self, expected_status: bool) -> bool:
        """Data Saver equals ``expected_status``."""
        return self.device["data_saver_mode"] == expected_status

    def assert_internet_speed(self, expected_speed: float, expected_desc: str | None = None) -> bool:
        """Speed test >= ``expected_speed`` Mbps (and, when given, band == ``expected_desc``, any case)."""
        speed, band = self._speed()
        speed = speed or 0.0
        if expected_desc is None:
            return speed >= expected_speed
        return speed >= expected_speed and band.lower() == expected_desc.lower()

    def assert_internet_not_excellent(self) -> bool:
        """The speed test's band is not Excellent."""
        return self._speed()[1].lower() != "excellent"

    def assert_can_send_mms(self, expected_status: bool) -> bool:
        """Whether MMS works equals ``expected_status``."""
        return self._can_send_mms() == expected_status

    def assert_mobile_data_usage_exceeded(self, expected_status: bool) -> bool:
        """Whether the data allowance is used up equals ``expected_status``."""
        return self.surroundings["mobile_data_usage_exceeded"] == expected_status

