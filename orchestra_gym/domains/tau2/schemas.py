"""Tool schemas of the tau2-bench v0.2.0 and v1.0.1 `mock`, `retail` and `airline` toolkits, as the policy sees them.

Interface data (tool names, descriptions, JSON-schema parameters and tool types) taken from the
tool schemas that tau2-bench v0.2.0 (github.com/sierra-research/tau2-bench, tag v0.2.0, MIT license,
Copyright (c) 2025 Sierra Research) sends to the model. They are reproduced exactly because the
policy must see the same tools as in the benchmark; the implementations are our own.

Each entry: ``name -> (tool_type, description, parameters)`` in the toolkit's own tool order;
``tool_type`` is tau2's ``READ`` / ``WRITE`` / ``GENERIC``.

v1.0.1 (tag v1.0.1) changed no schema of v0.2.0; it added retail's ``get_item_details``
(`RETAIL_TOOLS_V1`) and mock's user tools (`MOCK_USER_TOOLS`). Airline's and telecom's are the same.
"""

from __future__ import annotations

from typing import Any

MOCK_TOOLS: dict[str, tuple[str, str, dict[str, Any]]] = {
    'create_task': (
        'WRITE',
        'Create a new task for a user.',
        {'properties': {'user_id': {'description': 'The ID of the user creating the task',
                                    'title': 'User Id',
                                    'type': 'string'},
                        'title': {'description': 'The title of the task',
                                  'title': 'Title',
                                  'type': 'string'},
                        'description': {'default': None,
                                        'description': 'Optional description of the task',
                                        'title': 'Description',
                                        'type': 'string'}},
         'required': ['user_id', 'title'],
         'title': 'parameters',
         'type': 'object'},
    ),
    'get_users': (
        'READ',
        'Get all users in the database.',
        {'properties': {}, 'title': 'parameters', 'type': 'object'},
    ),
    'update_task_status': (
        'WRITE',
        'Update the status of a task.',
        {'properties': {'task_id': {'description': 'The ID of the task to update',
                                    'title': 'Task Id',
                                    'type': 'string'},
                        'status': {'description': 'The new status of the task',
                                   'enum': ['pending', 'completed'],
                                   'title': 'Status',
                                   'type': 'string'}},
         'required': ['task_id', 'status'],
         'title': 'parameters',
         'type': 'object'},
    ),
    'transfer_to_human_agents': (
        'GENERIC',
        ("Transfer the user to a human agent, with a summary of the user's issue.\n"
         '\n'
         'Only transfer if\n'
         ' -  the user explicitly asks for a human agent\n'
         " -  given the policy and the available tools, you cannot solve the user's issue."),
        {'properties': {'summary': {'description': "A summary of the user's issue.",
                                    'title': 'Summary',
                                    'type': 'string'}},
         'required': ['summary'],
         'title': 'parameters',
         'type': 'object'},
    ),
}

RETAIL_TOOLS: dict[str, tuple[str, str, dict[str, Any]]] = {
    'calculate': (
        'GENERIC',
        'Calculate the result of a mathematical expression.',
        {'properties': {'expression': {'description': 'The mathematical expression to calculate, such as '
                                                      "'2 + 2'. The expression can contain numbers, "
                                                      'operators (+, -, *, /), parentheses, and spaces.',
                                       'title': 'Expression',
                                       'type': 'string'}},
         'required': ['expression'],
         'title': 'parameters',
         'type': 'object'},
    ),
    'cancel_pending_order': (
        'WRITE',
        ('Cancel a pending order. If the order is already processed or delivered,\n'
         '\n'
         'it cannot be cancelled. The agent needs to explain the cancellation detail\n'
         'and ask for explicit user confirmation (yes/no) to proceed. If the user confirms,\n'
         "the order status will be changed to 'cancelled' and the payment will be refunded.\n"
         "The refund will be added to the user's gift card balance immediately if the payment\n"
         'was made using a gift card, otherwise the refund would take 5-7 business days to process.\n'
         'The function returns the order details after the cancellation.'),
        {'properties': {'order_id': {'description': "The order id, such as '#W0000000'. Be careful there "
                                                    "is a '#' symbol at the beginning of the order id.",
                                     'title': 'Order Id',
                                     'type': 'string'},
                        'reason': {'description': "The reason for cancellation, which should be either 'no "
                                                  "longer needed' or 'ordered by mistake'.",
                                   'title': 'Reason',
                                   'type': 'string'}},
         'required': ['order_id', 'reason'],
         'title': 'parameters',
         'type': 'object'},
    ),
    'exchange_delivered_order_items': (
        'WRITE',
        ('Exchange items in a delivered order to new items of the same product type.\n'
         '\n'
         'For a delivered order, return or exchange can be only done once by the agent.\n'
         'The agent needs to explain the exchange detail and ask for explicit user confirmation (yes/no) '
         'to proceed.'),
        {'properties': {'order_id': {'description': "The order id, such as '#W0000000'. Be careful there "
                                                    "is a '#' symbol at the beginning of the order id.",
                                     'title': 'Order Id',
                                     'type': 'string'},
                        'item_ids': {'description': 'The item ids to be exchanged, each such as '
                                                    "'1008292230'. There could be duplicate items in the "
                                                    'list.',
                                     'items': {'type': 'string'},
                                     'title': 'Item Ids',
                                     'type': 'array'},
                        'new_item_ids': {'description': 'The item ids to be exchanged for, each such as '
                                                        "'1008292230'.\n"
                                                        'There could be duplicate items in the list. Each '
                                                        'new item id should match the item id\n'
                                                        'in the same position and be of the same product.',
                                         'items': {'type': 'string'},
                                         'title': 'New Item Ids',
                                         'type': 'array'},
                        'payment_method_id': {'description': 'The payment method id to pay or receive '
                                                             'refund for the item price difference,\n'
                                                             "such as 'gift_card_0000000' or "
                                                             "'credit_card_0000000'. These can be looked "
                                                             'up\n'
                                                             'from the user or order details.',
                                              'title': 'Payment Method Id',
                                              'type': 'string'}},
         'required': ['order_id', 'item_ids', 'new_item_ids', 'payment_method_id'],
         'title': 'parameters',
         'type': 'object'},
    ),
    'find_user_id_by_name_zip': (
        'READ',
        ('Find user id by first name, last name, and zip code. If the user is not found, the function\n'
         '\n'
         'will return an error message. By default, find user id by email, and only call this function\n'
         'if the user is not found by email or cannot remember email.'),
        {'properties': {'first_name': {'description': "The first name of the customer, such as 'John'.",
                                       'title': 'First Name',
                                       'type': 'string'},
                        'last_name': {'description': "The last name of the customer, such as 'Doe'.",
                                      'title': 'Last Name',
                                      'type': 'string'},
                        'zip': {'description': "The zip code of the customer, such as '12345'.",
                                'title': 'Zip',
                                'type': 'string'}},
         'required': ['first_name', 'last_name', 'zip'],
         'title': 'parameters',
         'type': 'object'},
    ),
    'find_user_id_by_email': (
        'READ',
        'Find user id by email. If the user is not found, the function will return an error message.',
        {'properties': {'email': {'description': "The email of the user, such as 'something@example.com'.",
                                  'title': 'Email',
                                  'type': 'string'}},
         'required': ['email'],
         'title': 'parameters',
         'type': 'object'},
    ),
    'get_order_details': (
        'READ',
        'Get the status and details of an order.',
        {'properties': {'order_id': {'description': "The order id, such as '#W0000000'. Be careful there "
                                                    "is a '#' symbol at the beginning of the order id.",
                                     'title': 'Order Id',
                                     'type': 'string'}},
         'required': ['order_id'],
         'title': 'parameters',
         'type': 'object'},
    ),
    'get_product_details': (
        'READ',
        'Get the inventory details of a product.',
        {'properties': {'product_id': {'description': "The product id, such as '6086499569'. Be careful "
                                                      'the product id is different from the item id.',
                                       'title': 'Product Id',
                                       'type': 'string'}},
         'required': ['product_id'],
         'title': 'parameters',
         'type': 'object'},
    ),
    'get_user_details': (
        'READ',
        'Get the details of a user, including their orders.',
        {'properties': {'user_id': {'description': "The user id, such as 'sara_doe_496'.",
                                    'title': 'User Id',
                                    'type': 'string'}},
         'required': ['user_id'],
         'title': 'parameters',
         'type': 'object'},
    ),
    'list_all_product_types': (
        'READ',
        ('List the name and product id of all product types.\n'
         '\n'
         'Each product type has a variety of different items with unique item ids and options.\n'
         'There are only 50 product types in the store.'),
        {'properties': {}, 'title': 'parameters', 'type': 'object'},
    ),
    'modify_pending_order_address': (
        'WRITE',
        ('Modify the shipping address of a pending order. The agent needs to explain the modification '
         'detail and ask for explicit user confirmation (yes/no) to proceed.'),
        {'properties': {'order_id': {'description': "The order id, such as '#W0000000'. Be careful there "
                                                    "is a '#' symbol at the beginning of the order id.",
                                     'title': 'Order Id',
                                     'type': 'string'},
                        'address1': {'description': "The first line of the address, such as '123 Main St'.",
                                     'title': 'Address1',
                                     'type': 'string'},
                        'address2': {'description': "The second line of the address, such as 'Apt 1' or "
                                                    "''.",
                                     'title': 'Address2',
                                     'type': 'string'},
                        'city': {'description': "The city, such as 'San Francisco'.",
                                 'title': 'City',
                                 'type': 'string'},
                        'state': {'description': "The state, such as 'CA'.",
                                  'title': 'State',
                                  'type': 'string'},
                        'country': {'description': "The country, such as 'USA'.",
                                    'title': 'Country',
                                    'type': 'string'},
                        'zip': {'description': "The zip code, such as '12345'.",
                                'title': 'Zip',
                                'type': 'string'}},
         'required': ['order_id', 'address1', 'address2', 'city', 'state', 'country', 'zip'],
         'title': 'parameters',
         'type': 'object'},
    ),
    'modify_pending_order_items': (
        'WRITE',
        ('Modify items in a pending order to new items of the same product type. For a pending order, this '
         'function can only be called once. The agent needs to explain the exchange detail and ask for '
         'explicit user confirmation (yes/no) to proceed.'),
        {'properties': {'order_id': {'description': "The order id, such as '#W0000000'. Be careful there "
                                                    "is a '#' symbol at the beginning of the order id.",
                                     'title': 'Order Id',
                                     'type': 'string'},
                        'item_ids': {'description': 'The item ids to be modified, each such as '
                                                    "'1008292230'. There could be duplicate items in the "
                                                    'list.',
                                     'items': {'type': 'string'},
                                     'title': 'Item Ids',
                                     'type': 'array'},
                        'new_item_ids': {'description': 'The item ids to be modified for, each such as '
                                                        "'1008292230'. There could be duplicate items in "
                                                        'the list. Each new item id should match the item '
                                                        'id in the same position and be of the same '
                                                        'product.',
                                         'items': {'type': 'string'},
                                         'title': 'New Item Ids',
                                         'type': 'array'},
                        'payment_method_id': {'description': 'The payment method id to pay or receive '
                                                             'refund for the item price difference, such '
                                                             "as 'gift_card_0000000' or "
                                                             "'credit_card_0000000'. These can be looked "
                                                             'up from the user or order details.',
                                              'title': 'Payment Method Id',
                                              'type': 'string'}},
         'required': ['order_id', 'item_ids', 'new_item_ids', 'payment_method_id'],
         'title': 'parameters',
         'type': 'object'},
    ),
    'modify_pending_order_payment': (
        'WRITE',
        ('Modify the payment method of a pending order. The agent needs to explain the modification detail '
         'and ask for explicit user confirmation (yes/no) to proceed.'),
        {'properties': {'order_id': {'description': "The order id, such as '#W0000000'. Be careful there "
                                                    "is a '#' symbol at the beginning of the order id.",
                                     'title': 'Order Id',
                                     'type': 'string'},
                        'payment_method_id': {'description': 'The payment method id to pay or receive '
                                                             'refund for the item price difference, such '
                                                             "as 'gift_card_0000000' or "
                                                             "'credit_card_0000000'. These can be looked "
                                                             'up from the user or order details.',
                                              'title': 'Payment Method Id',
                                              'type': 'string'}},
         'required': ['order_id', 'payment_method_id'],
         'title': 'parameters',
         'type': 'object'},
    ),
    'modify_user_address': (
        'WRITE',
        ('Modify the default address of a user. The agent needs to explain the modification detail and ask '
         'for explicit user confirmation (yes/no) to proceed.'),
        {'properties': {'user_id': {'description': "The user id, such as 'sara_doe_496'.",
                                    'title': 'User Id',
                                    'type': 'string'},
                        'address1': {'description': "The first line of the address, such as '123 Main St'.",
                                     'title': 'Address1',
                                     'type': 'string'},
                        'address2': {'description': "The second line of the address, such as 'Apt 1' or "
                                                    "''.",
                                     'title': 'Address2',
                                     'type': 'string'},
                        'city': {'description': "The city, such as 'San Francisco'.",
                                 'title': 'City',
                                 'type': 'string'},
                        'state': {'description': "The state, such as 'CA'.",
                                  'title': 'State',
                                  'type': 'string'},
                        'country': {'description': "The country, such as 'USA'.",
                                    'title': 'Country',
                                    'type': 'string'},
                        'zip': {'description': "The zip code, such as '12345'.",
                                'title': 'Zip',
                                'type': 'string'}},
         'required': ['user_id', 'address1', 'address2', 'city', 'state', 'country', 'zip'],
         'title': 'parameters',
         'type': 'object'},
    ),
    'return_delivered_order_items': (
        'WRITE',
        ('Return some items of a delivered order.\n'
         '\n'
         "The order status will be changed to 'return requested'.\n"
         'The agent needs to explain the return detail and ask for explicit user confirmation (yes/no) to '
         'proceed.\n'
         'The user will receive follow-up email for how and where to return the item.'),
        {'properties': {'order_id': {'description': "The order id, such as '#W0000000'. Be careful there "
                                                    "is a '#' symbol at the beginning of the order id.",
                                     'title': 'Order Id',
                                     'type': 'string'},
                        'item_ids': {'description': 'The item ids to be returned, each such as '
                                                    "'1008292230'. There could be duplicate items in the "
                                                    'list.',
                                     'items': {'type': 'string'},
                                     'title': 'Item Ids',
                                     'type': 'array'},
                        'payment_method_id': {'description': 'The payment method id to pay or receive '
                                                             'refund for the item price difference, such '
                                                             "as 'gift_card_0000000' or "
                                                             "'credit_card_0000000'.\n"
                                                             'These can be looked up from the user or '
                                                             'order details.',
                                              'title': 'Payment Method Id',
                                              'type': 'string'}},
         'required': ['order_id', 'item_ids', 'payment_method_id'],
         'title': 'parameters',
         'type': 'object'},
    ),
    'transfer_to_human_agents': (
        'GENERIC',
        ("Transfer the user to a human agent, with a summary of the user's issue.\n"
         '\n'
         'Only transfer if\n'
         ' -  the user explicitly asks for a human agent\n'
         " -  given the policy and the available tools, you cannot solve the user's issue."),
        {'properties': {'summary': {'description': "A summary of the user's issue.",
                                    'title': 'Summary',
                                    'type': 'string'}},
         'required': ['summary'],
         'title': 'parameters',
         'type': 'object'},
    ),
}

AIRLINE_TOOLS: dict[str, tuple[str, str, dict[str, Any]]] = {
    'book_reservation': (
        'WRITE',
        'Book a reservation.',
        {'$defs': {'FlightInfo': {'properties': {'flight_number': {'description': 'Flight number, such as '
                                                                                  "'HAT001'.",
                                                                   'title': 'Flight Number',
                                                                   'type': 'string'},
                                                 'date': {'description': 'The date for the flight in the '
                                                                         "format 'YYYY-MM-DD', such as "
                                                                         "'2024-05-01'.",
                                                          'title': 'Date',
                                                          'type': 'string'}},
                                  'required': ['flight_number', 'date'],
                                  'title': 'FlightInfo',
                                  'type': 'object'},
                   'Passenger': {'properties': {'first_name': {'description': "Passenger's first name",
                                                               'title': 'First Name',
                                                               'type': 'string'},
                                                'last_name': {'description': "Passenger's last name",
                                                              'title': 'Last Name',
                                                              'type': 'string'},
                                                'dob': {'description': 'Date of birth in YYYY-MM-DD format',
                                                        'title': 'Dob',
                                                        'type': 'string'}},
                                 'required': ['first_name', 'last_name', 'dob'],
                                 'title': 'Passenger',
                                 'type': 'object'},
                   'Payment': {'properties': {'payment_id': {'description': 'Unique identifier for the '
                                                                            'payment',
                                                             'title': 'Payment Id',
                                                             'type': 'string'},
                                              'amount': {'description': 'Payment amount in dollars',
                                                         'title': 'Amount',
                                                         'type': 'integer'}},
                               'required': ['payment_id', 'amount'],
                               'title': 'Payment',
                               'type': 'object'}},
         'properties': {'user_id': {'description': 'The ID of the user to book the reservation such as '
                                                   "'sara_doe_496'`.",
                                    'title': 'User Id',
                                    'type': 'string'},
                        'origin': {'description': "The IATA code for the origin city such as 'SFO'.",
                                   'title': 'Origin',
                                   'type': 'string'},
                        'destination': {'description': 'The IATA code for the destination city such as '
                                                       "'JFK'.",
                                        'title': 'Destination',
                                        'type': 'string'},
                        'flight_type': {'description': "The type of flight such as 'one_way' or "
                                                       "'round_trip'.",
                                        'enum': ['round_trip', 'one_way'],
                                        'title': 'Flight Type',
                                        'type': 'string'},
                        'cabin': {'description': "The cabin class such as 'basic_economy', 'economy', or "
                                                 "'business'.",
                                  'enum': ['business', 'economy', 'basic_economy'],
                                  'title': 'Cabin',
                                  'type': 'string'},
                        'flights': {'description': 'An array of objects containing details about each '
                                                   'piece of flight.',
                                    'items': {'anyOf': [{'$ref': '#/$defs/FlightInfo'},
                                                        {'additionalProperties': True, 'type': 'object'}]},
                                    'title': 'Flights',
                                    'type': 'array'},
                        'passengers': {'description': 'An array of objects containing details about each '
                                                      'passenger.',
                                       'items': {'anyOf': [{'$ref': '#/$defs/Passenger'},
                                                           {'additionalProperties': True,
                                                            'type': 'object'}]},
                                       'title': 'Passengers',
                                       'type': 'array'},
                        'payment_methods': {'description': 'An array of objects containing details about '
                                                           'each payment method.',
                                            'items': {'anyOf': [{'$ref': '#/$defs/Payment'},
                                                                {'additionalProperties': True,
                                                                 'type': 'object'}]},
                                            'title': 'Payment Methods',
                                            'type': 'array'},
                        'total_baggages': {'description': 'The total number of baggage items to book the '
                                                          'reservation.',
                                           'title': 'Total Baggages',
                                           'type': 'integer'},
                        'nonfree_baggages': {'description': 'The number of non-free baggage items to book '
                                                            'the reservation.',
                                             'title': 'Nonfree Baggages',
                                             'type': 'integer'},
                        'insurance': {'description': 'Whether the reservation has insurance.',
                                      'enum': ['yes', 'no'],
                                      'title': 'Insurance',
                                      'type': 'string'}},
         'required': ['user_id',
                      'origin',
                      'destination',
                      'flight_type',
                      'cabin',
                      'flights',
                      'passengers',
                      'payment_methods',
                      'total_baggages',
                      'nonfree_baggages',
                      'insurance'],
         'title': 'parameters',
         'type': 'object'},
    ),
    'calculate': (
        'GENERIC',
        'Calculate the result of a mathematical expression.',
        {'properties': {'expression': {'description': 'The mathematical expression to calculate, such as '
                                                      "'2 + 2'. The expression can contain numbers, "
                                                      'operators (+, -, *, /), parentheses, and spaces.',
                                       'title': 'Expression',
                                       'type': 'string'}},
         'required': ['expression'],
         'title': 'parameters',
         'type': 'object'},
    ),
    'cancel_reservation': (
        'WRITE',
        'Cancel the whole reservation.',
        {'properties': {'reservation_id': {'description': "The reservation ID, such as 'ZFA04Y'.",
                                           'title': 'Reservation Id',
                                           'type': 'string'}},
         'required': ['reservation_id'],
         'title': 'parameters',
         'type': 'object'},
    ),
    'get_reservation_details': (
        'READ',
        'Get the details of a reservation.',
        {'properties': {'reservation_id': {'description': "The reservation ID, such as '8JX2WO'.",
                                           'title': 'Reservation Id',
                                           'type': 'string'}},
         'required': ['reservation_id'],
         'title': 'parameters',
         'type': 'object'},
    ),
    'get_user_details': (
        'READ',
        'Get the details of a user, including their reservations.',
        {'properties': {'user_id': {'description': "The user ID, such as 'sara_doe_496'.",
                                    'title': 'User Id',
                                    'type': 'string'}},
         'required': ['user_id'],
         'title': 'parameters',
         'type': 'object'},
    ),
    'list_all_airports': (
        'READ',
        'Returns a list of all available airports.',
        {'properties': {}, 'title': 'parameters', 'type': 'object'},
    ),
    'search_direct_flight': (
        'READ',
        'Search for direct flights between two cities on a specific date.',
        {'properties': {'origin': {'description': 'The origin city airport in three letters, such as '
                                                  "'JFK'.",
                                   'title': 'Origin',
                                   'type': 'string'},
                        'destination': {'description': 'The destination city airport in three letters, '
                                                       "such as 'LAX'.",
                                        'title': 'Destination',
                                        'type': 'string'},
                        'date': {'description': "The date of the flight in the format 'YYYY-MM-DD', such "
                                                "as '2024-01-01'.",
                                 'title': 'Date',
                                 'type': 'string'}},
         'required': ['origin', 'destination', 'date'],
         'title': 'parameters',
         'type': 'object'},
    ),
    'search_onestop_flight': (
        'READ',
        'Search for one-stop flights between two cities on a specific date.',
        {'properties': {'origin': {'description': 'The origin city airport in three letters, such as '
                                                  "'JFK'.",
                                   'title': 'Origin',
                                   'type': 'string'},
                        'destination': {'description': 'The destination city airport in three letters, '
                                                       "such as 'LAX'.",
                                        'title': 'Destination',
                                        'type': 'string'},
                        'date': {'description': "The date of the flight in the format 'YYYY-MM-DD', such "
                                                "as '2024-05-01'.",
                                 'title': 'Date',
                                 'type': 'string'}},
         'required': ['origin', 'destination', 'date'],
         'title': 'parameters',
         'type': 'object'},
    ),
    'send_certificate': (
        'WRITE',
        'Send a certificate to a user. Be careful!',
        {'properties': {'user_id': {'description': 'The ID of the user to book the reservation, such as '
                                                   "'sara_doe_496'.",
                                    'title': 'User Id',
                                    'type': 'string'},
                        'amount': {'description': 'The amount of the certificate to send.',
                                   'title': 'Amount',
                                   'type': 'integer'}},
         'required': ['user_id', 'amount'],
         'title': 'parameters',
         'type': 'object'},
    ),
    'transfer_to_human_agents': (
        'GENERIC',
        ("Transfer the user to a human agent, with a summary of the user's issue.\n"
         '\n'
         'Only transfer if\n'
         ' -  the user explicitly asks for a human agent\n'
         " -  given the policy and the available tools, you cannot solve the user's issue."),
        {'properties': {'summary': {'description': "A summary of the user's issue.",
                                    'title': 'Summary',
                                    'type': 'string'}},
         'required': ['summary'],
         'title': 'parameters',
         'type': 'object'},
    ),
    'update_reservation_baggages': (
        'WRITE',
        'Update the baggage information of a reservation.',
        {'properties': {'reservation_id': {'description': "The reservation ID, such as 'ZFA04Y'",
                                           'title': 'Reservation Id',
                                           'type': 'string'},
                        'total_baggages': {'description': 'The updated total number of baggage items '
                                                          'included in the reservation.',
                                           'title': 'Total Baggages',
                                           'type': 'integer'},
                        'nonfree_baggages': {'description': 'The updated number of non-free baggage items '
                                                            'included in the reservation.',
                                             'title': 'Nonfree Baggages',
                                             'type': 'integer'},
                        'payment_id': {'description': 'The payment id stored in user profile, such as '
                                                      "'credit_card_7815826', 'gift_card_7815826', "
                                                      "'certificate_7815826'.",
                                       'title': 'Payment Id',
                                       'type': 'string'}},
         'required': ['reservation_id', 'total_baggages', 'nonfree_baggages', 'payment_id'],
         'title': 'parameters',
         'type': 'object'},
    ),
    'update_reservation_flights': (
        'WRITE',
        'Update the flight information of a reservation.',
        {'$defs': {'FlightInfo': {'properties': {'flight_number': {'description': 'Flight number, such as '
                                                                                  "'HAT001'.",
                                                                   'title': 'Flight Number',
                                                                   'type': 'string'},
                                                 'date': {'description': 'The date for the flight in the '
                                                                         "format 'YYYY-MM-DD', such as "
                                                                         "'2024-05-01'.",
                                                          'title': 'Date',
                                                          'type': 'string'}},
                                  'required': ['flight_number', 'date'],
                                  'title': 'FlightInfo',
                                  'type': 'object'}},
         'properties': {'reservation_id': {'description': "The reservation ID, such as 'ZFA04Y'.",
                                           'title': 'Reservation Id',
                                           'type': 'string'},
                        'cabin': {'description': 'The cabin class of the reservation',
                                  'enum': ['business', 'economy', 'basic_economy'],
                                  'title': 'Cabin',
                                  'type': 'string'},
                        'flights': {'description': 'An array of objects containing details about each '
                                                   'piece of flight in the ENTIRE new reservation. Even if '
                                                   'the a flight segment is not changed, it should still '
                                                   'be included in the array.',
                                    'items': {'anyOf': [{'$ref': '#/$defs/FlightInfo'},
                                                        {'additionalProperties': True, 'type': 'object'}]},
                                    'title': 'Flights',
                                    'type': 'array'},
                        'payment_id': {'description': 'The payment id stored in user profile, such as '
                                                      "'credit_card_7815826', 'gift_card_7815826', "
                                                      "'certificate_7815826'.",
                                       'title': 'Payment Id',
                                       'type': 'string'}},
         'required': ['reservation_id', 'cabin', 'flights', 'payment_id'],
         'title': 'parameters',
         'type': 'object'},
    ),
    'update_reservation_passengers': (
        'WRITE',
        'Update the passenger information of a reservation.',
        {'$defs': {'Passenger': {'properties': {'first_name': {'description': "Passenger's first name",
                                                               'title': 'First Name',
                                                               'type': 'string'},
                                                'last_name': {'description': "Passenger's last name",
                                                              'title': 'Last Name',
                                                              'type': 'string'},
                                                'dob': {'description': 'Date of birth in YYYY-MM-DD format',
                                                        'title': 'Dob',
                                                        'type': 'string'}},
                                 'required': ['first_name', 'last_name', 'dob'],
                                 'title': 'Passenger',
                                 'type': 'object'}},
         'properties': {'reservation_id': {'description': "The reservation ID, such as 'ZFA04Y'.",
                                           'title': 'Reservation Id',
                                           'type': 'string'},
                        'passengers': {'description': 'An array of objects containing details about each '
                                                      'passenger.',
                                       'items': {'anyOf': [{'$ref': '#/$defs/Passenger'},
                                                           {'additionalProperties': True,
                                                            'type': 'object'}]},
                                       'title': 'Passengers',
                                       'type': 'array'}},
         'required': ['reservation_id', 'passengers'],
         'title': 'parameters',
         'type': 'object'},
    ),
    'get_flight_status': (
        'READ',
        'Get the status of a flight.',
        {'properties': {'flight_number': {'description': 'The flight number.',
                                          'title': 'Flight Number',
                                          'type': 'string'},
                        'date': {'description': 'The date of the flight.',
                                 'title': 'Date',
                                 'type': 'string'}},
         'required': ['flight_number', 'date'],
         'title': 'parameters',
         'type': 'object'},
    ),
}


def _insert_after(tools: dict[str, Any], after: str, name: str, entry: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in tools.items():
        out[key] = value
        if key == after:
            out[name] = entry
    return out


#: tau2-bench v1.0.1's retail tools: v0.2.0's plus ``get_item_details`` after ``get_product_details``.
RETAIL_TOOLS_V1: dict[str, tuple[str, str, dict[str, Any]]] = _insert_after(RETAIL_TOOLS, "get_product_details", "get_item_details", (
    'READ',
    'Get the inventory details of an item.',
    {'properties': {'item_id': {'description': "The item id, such as '6086499569'. Be careful the item id is "
                                               'different from the product id.',
                                'title': 'Item Id',
                                'type': 'string'}},
     'required': ['item_id'],
     'title': 'parameters',
     'type': 'object'},
))

#: tau2-bench v1.0.1's mock user tools (the user's notification inbox).
MOCK_USER_TOOLS: dict[str, tuple[str, str, dict[str, Any]]] = {
    'check_notifications': (
        'READ',
        "Check all notifications in the user's inbox.",
        {'properties': {}, 'title': 'parameters', 'type': 'object'},
    ),
    'dismiss_notification': (
        'WRITE',
        'Dismiss (mark as read) a notification.',
        {'properties': {'notification_id': {'description': 'The ID of the notification to dismiss.',
                                            'title': 'Notification Id',
                                            'type': 'string'}},
         'required': ['notification_id'],
         'title': 'parameters',
         'type': 'object'},
    ),
}
