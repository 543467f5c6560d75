"""Every registered environment served over OpenEnv's protocol, and a Gymnasium client for it.

``orchestra serve --env ID`` (`orchestra_gym.serving.server`) serves one env id through the
`openenv` package's own server (``HTTPEnvServer``: ``WS /ws``, one env instance per session; ``POST /reset``,
``GET /state``, ``GET /schema``, ``GET /health``; a sessionless ``POST /step`` is a 409 pointing at ``WS /ws``), so TRL,
SkyRL, Unsloth or any OpenEnv client trains on it unchanged. ``gym.make("orchestra_gym:Remote-v0",
base_url=...)`` (`orchestra_gym.serving.client.RemoteEnv`) is a Gymnasium env over such a server.
The wire types are in `orchestra_gym.serving.protocol`. Needs the ``serve`` extra (``openenv``).
"""

__all__ = ["protocol", "server", "client"]
