"""Tool schemas of the tau2-bench v0.2.0 `mock` and `retail` toolkits, as the policy sees them.

Interface data (tool names, descriptions, JSON-schema parameters and tool types) taken from the
tool schemas that tau2-bench v0.2.0 (github.com/sierra-research/tau2-bench, tag v0.2.0, MIT license,
Copyright (c) 2025 Sierra Research) sends to the model. They are reproduced exactly because the
policy must see the same tools as in the benchmark; the implementations are our own.

Each entry: ``name -> (tool_type, description, parameters)`` in the toolkit's own tool order;
``tool_type`` is tau2's ``READ`` / ``WRITE`` / ``GENERIC``.
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
