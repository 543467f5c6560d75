"""Tools the orchestrator calls: chat models, simulated experts, search, a Python sandbox, a cache."""
