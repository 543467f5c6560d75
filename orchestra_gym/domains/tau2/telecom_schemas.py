"""Tool schemas of the tau2-bench v0.2.0 `telecom` toolkits (agent and user), as the models see them.

Interface data (tool names, descriptions, JSON-schema parameters and tool types) taken from the
tool schemas that tau2-bench v0.2.0 (github.com/sierra-research/tau2-bench, tag v0.2.0, MIT license,
Copyright (c) 2025 Sierra Research) sends to the model (agent tools) and to the user simulator (user
tools). They are reproduced exactly because both must see the same tools as in the benchmark; the
implementations are our own (`orchestra_gym.domains.tau2.telecom`, `.telecom_user`).

Each entry: ``name -> (tool_type, description, parameters)`` in the toolkit's own tool order.
"""

from __future__ import annotations

from typing import Any

TELECOM_TOOLS: dict[str, tuple[str, str, dict[str, Any]]] = {
    'get_customer_by_phone': ('READ',
     'Finds a customer by their primary contact or line phone number.',
     {'properties': {'phone_number': {'description': 'The phone number to search for.',
                                      'title': 'Phone Number',
                                      'type': 'string'}},
      'required': ['phone_number'],
      'title': 'parameters',
      'type': 'object'}),
    'get_customer_by_id': ('READ',
     'Retrieves a customer directly by their unique ID.',
     {'properties': {'customer_id': {'description': 'The unique identifier of the customer.',
                                     'title': 'Customer Id',
                                     'type': 'string'}},
      'required': ['customer_id'],
      'title': 'parameters',
      'type': 'object'}),
    'get_customer_by_name': ('READ',
     'Searches for customers by name and DOB. May return multiple matches if names are similar,\n'
     '\n'
     'DOB helps disambiguate.',
     {'properties': {'full_name': {'description': 'The full name of the customer.',
                                   'title': 'Full Name',
                                   'type': 'string'},
                     'dob': {'description': 'Date of birth for verification, in the format YYYY-MM-DD.',
                             'title': 'Dob',
                             'type': 'string'}},
      'required': ['full_name', 'dob'],
      'title': 'parameters',
      'type': 'object'}),
    'get_details_by_id': ('READ',
     'Retrieves the details for a given ID.\n'
     '\n'
     'The ID must be a valid ID for a Customer, Line, Device, Bill, or Plan.',
     {'properties': {'id': {'description': 'The ID of the object to retrieve.', 'title': 'Id', 'type': 'string'}},
      'required': ['id'],
      'title': 'parameters',
      'type': 'object'}),
    'suspend_line': ('WRITE',
     'Suspends a specific line (max 6 months).\n'
     '\n'
     'Checks: Line status must be Active.\n'
     'Logic: Sets line status to Suspended, records suspension_start_date.',
     {'properties': {'customer_id': {'description': 'ID of the customer who owns the line.',
                                     'title': 'Customer Id',
                                     'type': 'string'},
                     'line_id': {'description': 'ID of the line to suspend.',
                                 'title': 'Line Id',
                                 'type': 'string'},
                     'reason': {'description': 'Reason for suspension.', 'title': 'Reason', 'type': 'string'}},
      'required': ['customer_id', 'line_id', 'reason'],
      'title': 'parameters',
      'type': 'object'}),
    'resume_line': ('WRITE',
     'Resumes a suspended line.\n'
     '\n'
     'Checks: Line status must be Suspended or Pending Activation.\n'
     'Logic: Sets line status to Active, clears suspension_start_date.',
     {'properties': {'customer_id': {'description': 'ID of the customer who owns the line.',
                                     'title': 'Customer Id',
                                     'type': 'string'},
                     'line_id': {'description': 'ID of the line to resume.',
                                 'title': 'Line Id',
                                 'type': 'string'}},
      'required': ['customer_id', 'line_id'],
      'title': 'parameters',
      'type': 'object'}),
    'get_bills_for_customer': ('READ',
     "Retrieves a list of the customer's bills, most recent first.",
     {'properties': {'customer_id': {'description': 'ID of the customer.',
                                     'title': 'Customer Id',
                                     'type': 'string'},
                     'limit': {'default': 12,
                               'description': 'Maximum number of bills to return.',
                               'title': 'Limit',
                               'type': 'integer'}},
      'required': ['customer_id'],
      'title': 'parameters',
      'type': 'object'}),
    'send_payment_request': ('WRITE',
     'Sends a payment request to the customer for a specific bill.\n'
     '\n'
     'Checks:\n'
     '    - Customer exists\n'
     '    - Bill exists and belongs to the customer\n'
     '    - No other bills are already awaiting payment for this customer\n'
     'Logic: Sets bill status to AWAITING_PAYMENT and notifies customer.\n'
     'Warning: This method does not check if the bill is already PAID.\n'
     'Always check the bill status before calling this method.',
     {'properties': {'customer_id': {'description': 'ID of the customer who owns the bill.',
                                     'title': 'Customer Id',
                                     'type': 'string'},
                     'bill_id': {'description': 'ID of the bill to send payment request for.',
                                 'title': 'Bill Id',
                                 'type': 'string'}},
      'required': ['customer_id', 'bill_id'],
      'title': 'parameters',
      'type': 'object'}),
    'get_data_usage': ('READ',
     'Retrieves current billing cycle data usage for a line, including data\n'
     '\n'
     'refueling amount, data limit, and cycle end date.',
     {'properties': {'customer_id': {'description': 'ID of the customer who owns the line.',
                                     'title': 'Customer Id',
                                     'type': 'string'},
                     'line_id': {'description': 'ID of the line to check usage for.',
                                 'title': 'Line Id',
                                 'type': 'string'}},
      'required': ['customer_id', 'line_id'],
      'title': 'parameters',
      'type': 'object'}),
    'enable_roaming': ('WRITE',
     'Enables international roaming on a line.',
     {'properties': {'customer_id': {'description': 'ID of the customer who owns the line.',
                                     'title': 'Customer Id',
                                     'type': 'string'},
                     'line_id': {'description': 'ID of the line to enable roaming for.',
                                 'title': 'Line Id',
                                 'type': 'string'}},
      'required': ['customer_id', 'line_id'],
      'title': 'parameters',
      'type': 'object'}),
    'disable_roaming': ('WRITE',
     'Disables international roaming on a line.',
     {'properties': {'customer_id': {'description': 'ID of the customer who owns the line.',
                                     'title': 'Customer Id',
                                     'type': 'string'},
                     'line_id': {'description': 'ID of the line to disable roaming for.',
                                 'title': 'Line Id',
                                 'type': 'string'}},
      'required': ['customer_id', 'line_id'],
      'title': 'parameters',
      'type': 'object'}),
    'transfer_to_human_agents': ('GENERIC',
     "Transfer the user to a human agent, with a summary of the user's issue.\n"
     '\n'
     'Only transfer if\n'
     ' -  the user explicitly asks for a human agent\n'
     " -  given the policy and the available tools, you cannot solve the user's issue.",
     {'properties': {'summary': {'description': "A summary of the user's issue.",
                                 'title': 'Summary',
                                 'type': 'string'}},
      'required': ['summary'],
      'title': 'parameters',
      'type': 'object'}),
    'refuel_data': ('WRITE',
     "Refuels data for a specific line, adding to the customer's bill.\n"
     '\n'
     'Checks: Line status must be Active, Customer owns the line.\n'
     "Logic: Adds data to the line and charges customer based on the plan's refueling rate.",
     {'properties': {'customer_id': {'description': 'ID of the customer who owns the line.',
                                     'title': 'Customer Id',
                                     'type': 'string'},
                     'line_id': {'description': 'ID of the line to refuel data for.',
                                 'title': 'Line Id',
                                 'type': 'string'},
                     'gb_amount': {'description': 'Amount of data to add in gigabytes.',
                                   'title': 'Gb Amount',
                                   'type': 'number'}},
      'required': ['customer_id', 'line_id', 'gb_amount'],
      'title': 'parameters',
      'type': 'object'}),
}

TELECOM_USER_TOOLS: dict[str, tuple[str, str, dict[str, Any]]] = {
    'check_status_bar': ('READ',
     "Shows what icons are currently visible in your phone's status bar (the area at the top of the screen). "
     'Displays network signal strength, mobile data status (enabled, disabled, data saver), Wi-Fi status, and '
     'battery level.',
     {'properties': {}, 'title': 'parameters', 'type': 'object'}),
    'check_network_status': ('READ',
     "Checks your phone's connection status to cellular networks and Wi-Fi. Shows airplane mode status, signal "
     'strength, network type, whether mobile data is enabled, and whether data roaming is enabled.',
     {'properties': {}, 'title': 'parameters', 'type': 'object'}),
    'check_network_mode_preference': ('READ',
     'Shows the current network mode preference.',
     {'properties': {}, 'title': 'parameters', 'type': 'object'}),
    'set_network_mode_preference': ('WRITE',
     'Changes the type of cellular network your phone prefers to connect to (e.g., 5G, LTE/4G, 3G). Higher-speed '
     'networks (LTE/5G) provide faster data but may use more battery.',
     {'$defs': {'NetworkModePreference': {'enum': ['4g_5g_preferred', '4g_only', '3g_only', '2g_only'],
                                          'title': 'NetworkModePreference',
                                          'type': 'string'}},
      'properties': {'mode': {'anyOf': [{'$ref': '#/$defs/NetworkModePreference'}, {'type': 'string'}],
                              'title': 'Mode'}},
      'required': ['mode'],
      'title': 'parameters',
      'type': 'object'}),
    'run_speed_test': ('READ',
     'Measures your current internet connection speed (download speed). Provides information about connection '
     'quality and what activities it can support.',
     {'properties': {}, 'title': 'parameters', 'type': 'object'}),
    'toggle_airplane_mode': ('WRITE',
     'Toggles Airplane Mode ON or OFF. When ON, it disconnects all wireless communications including cellular, '
     'Wi-Fi, and Bluetooth.\n'
     '\n'
     'Returns the new state of airplane_mode.',
     {'properties': {}, 'title': 'parameters', 'type': 'object'}),
    'check_sim_status': ('READ',
     'Checks if your SIM card is working correctly and displays its current status. Shows if the SIM is active, '
     'missing, or locked with a PIN or PUK code.',
     {'properties': {}, 'title': 'parameters', 'type': 'object'}),
    'reseat_sim_card': ('WRITE',
     'Simulates removing and reinserting your SIM card. This can help resolve recognition issues.',
     {'properties': {}, 'title': 'parameters', 'type': 'object'}),
    'toggle_data': ('WRITE',
     "Toggles your phone's mobile data connection ON or OFF. Controls whether your phone can use cellular data "
     'for internet access when Wi-Fi is unavailable.\n'
     '\n'
     'Returns the new data connection status.',
     {'properties': {}, 'title': 'parameters', 'type': 'object'}),
    'toggle_roaming': ('WRITE',
     "Toggles Data Roaming ON or OFF. When ON, your phone can use data networks in areas outside your carrier's "
     'coverage.\n'
     '\n'
     'Returns the new data roaming status.',
     {'properties': {}, 'title': 'parameters', 'type': 'object'}),
    'check_data_restriction_status': ('READ',
     'Checks if your phone has any data-limiting features active. Shows if Data Saver mode is on.',
     {'properties': {}, 'title': 'parameters', 'type': 'object'}),
    'toggle_data_saver_mode': ('WRITE',
     'Toggles Data Saver mode ON or OFF. When ON, it reduces data usage, which may affect data speed.\n'
     '\n'
     'Returns the new data saver mode status.',
     {'properties': {}, 'title': 'parameters', 'type': 'object'}),
    'check_apn_settings': ('READ',
     "Checks the technical APN settings your phone uses to connect to your carrier's mobile data network. Shows "
     'current APN name and MMSC URL for picture messaging.',
     {'properties': {}, 'title': 'parameters', 'type': 'object'}),
    'set_apn_settings': ('WRITE',
     'Sets the APN settings for the phone.',
     {'$defs': {'APNNames': {'enum': ['internet', 'broken'], 'title': 'APNNames', 'type': 'string'},
                'APNSettings': {'additionalProperties': False,
                                'description': 'Represents the configuration for a single Access Point Name '
                                               '(APN).',
                                'properties': {'apn_name': {'$ref': '#/$defs/APNNames',
                                                            'default': 'internet',
                                                            'description': 'The name identifier for the APN '
                                                                           'connection.'},
                                               'reset_at_reboot': {'default': False,
                                                                   'description': 'Whether the APN settings will '
                                                                                  'be reset at the next reboot.',
                                                                   'title': 'Reset At Reboot',
                                                                   'type': 'boolean'},
                                               'mms_apn': {'anyOf': [{'type': 'string'}, {'type': 'null'}],
                                                           'default': 'mms',
                                                           'description': 'Specific APN name used for MMS '
                                                                          'traffic, if different from general '
                                                                          'data.',
                                                           'title': 'Mms Apn'},
                                               'mmsc_url': {'anyOf': [{'type': 'string'}, {'type': 'null'}],
                                                            'default': 'http://mms.carrier.com/mms/wapenc',
                                                            'description': 'The URL of the Multimedia Messaging '
                                                                           'Service Center (MMSC). Crucial for '
                                                                           'MMS.',
                                                            'title': 'Mmsc Url'},
                                               'mms_proxy': {'anyOf': [{'type': 'string'}, {'type': 'null'}],
                                                             'default': None,
                                                             'description': 'The proxy server address required '
                                                                            'for MMS traffic on some networks.',
                                                             'title': 'Mms Proxy'},
                                               'mms_port': {'anyOf': [{'type': 'integer'}, {'type': 'null'}],
                                                            'default': None,
                                                            'description': 'The proxy server port required for '
                                                                           'MMS traffic on some networks.',
                                                            'title': 'Mms Port'}},
                                'title': 'APNSettings',
                                'type': 'object'}},
      'properties': {'apn_settings': {'anyOf': [{'$ref': '#/$defs/APNSettings'},
                                                {'additionalProperties': True, 'type': 'object'}],
                                      'title': 'Apn Settings'}},
      'required': ['apn_settings'],
      'title': 'parameters',
      'type': 'object'}),
    'reset_apn_settings': ('WRITE',
     'Resets your APN settings to the default settings.',
     {'properties': {}, 'title': 'parameters', 'type': 'object'}),
    'check_wifi_status': ('READ',
     "Checks your Wi-Fi connection status. Shows if Wi-Fi is turned on, which network you're connected to (if "
     'any), and the signal strength.',
     {'properties': {}, 'title': 'parameters', 'type': 'object'}),
    'toggle_wifi': ('WRITE',
     "Toggles your phone's Wi-Fi radio ON or OFF. Controls whether your phone can discover and connect to "
     'wireless networks for internet access.\n'
     '\n'
     'Returns the new Wi-Fi status.',
     {'properties': {}, 'title': 'parameters', 'type': 'object'}),
    'check_wifi_calling_status': ('READ',
     'Checks if Wi-Fi Calling is enabled on your device. This feature allows you to make and receive calls over '
     'a Wi-Fi network instead of using the cellular network.',
     {'properties': {}, 'title': 'parameters', 'type': 'object'}),
    'toggle_wifi_calling': ('WRITE',
     'Toggles Wi-Fi Calling ON or OFF. This feature allows you to make and receive calls over Wi-Fi instead of '
     'the cellular network, which can help in areas with weak cellular signal.\n'
     '\n'
     'Returns the new Wi-Fi Calling status.',
     {'properties': {}, 'title': 'parameters', 'type': 'object'}),
    'check_vpn_status': ('READ',
     "Checks if you're using a VPN (Virtual Private Network) connection. Shows if a VPN is active, connected, "
     'and displays any available connection details.',
     {'properties': {}, 'title': 'parameters', 'type': 'object'}),
    'connect_vpn': ('WRITE',
     'Connects to your VPN (Virtual Private Network).',
     {'properties': {}, 'title': 'parameters', 'type': 'object'}),
    'disconnect_vpn': ('WRITE',
     'Disconnects any active VPN (Virtual Private Network) connection. Stops routing your internet traffic '
     'through a VPN server, which might affect connection speed or access to content.',
     {'properties': {}, 'title': 'parameters', 'type': 'object'}),
    'check_installed_apps': ('READ',
     'Returns the name of all installed apps on the phone.',
     {'properties': {}, 'title': 'parameters', 'type': 'object'}),
    'check_app_status': ('READ',
     'Checks detailed information about a specific app. Shows its permissions and background data usage '
     'settings.',
     {'properties': {'app_name': {'title': 'App Name', 'type': 'string'}},
      'required': ['app_name'],
      'title': 'parameters',
      'type': 'object'}),
    'check_app_permissions': ('READ',
     'Checks what permissions a specific app currently has. Shows if the app has access to features like '
     'storage, camera, location, etc.',
     {'properties': {'app_name': {'title': 'App Name', 'type': 'string'}},
      'required': ['app_name'],
      'title': 'parameters',
      'type': 'object'}),
    'grant_app_permission': ('WRITE',
     'Gives a specific permission to an app (like access to storage, camera, or location). Required for some app '
     'functions to work properly.',
     {'properties': {'app_name': {'description': 'The name of the app to grant the permission to.',
                                  'title': 'App Name',
                                  'type': 'string'},
                     'permission': {'description': 'The permission to grant, should be lowercase.',
                                    'title': 'Permission',
                                    'type': 'string'}},
      'required': ['app_name', 'permission'],
      'title': 'parameters',
      'type': 'object'}),
    'can_send_mms': ('READ',
     'Checks if the default messaging app can send MMS messages.',
     {'properties': {}, 'title': 'parameters', 'type': 'object'}),
    'reboot_device': ('WRITE',
     'Restarts your phone completely. This can help resolve many temporary software glitches by refreshing all '
     'running services and connections.',
     {'properties': {}, 'title': 'parameters', 'type': 'object'}),
    'check_payment_request': ('READ',
     'Checks if the agent has sent you a payment request.',
     {'properties': {}, 'title': 'parameters', 'type': 'object'}),
    'make_payment': ('WRITE',
     'Makes a payment for the bill that the agent has sent you.',
     {'properties': {}, 'title': 'parameters', 'type': 'object'}),
}
