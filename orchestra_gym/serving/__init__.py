"""Every registered environment served over OpenEnv's protocol, and a Gymnasium client for it.

``orchestra serve --env ID`` (`orchestra_gym.serving.server`) serves one env id through the
`openenv` package's own server (``HTTPEnvServer``: ``POST /reset``, ``POST /step``, ``GET /state``,
``GET /schema``, ``GET /health``, ``WS /ws``; one env instance per WebSocket session), so TRL,
SkyRL, Unsloth or any OpenEnv client trains on it unchanged. ``gym.make("orchestra_gym:Remote-v0",
base_url=...)`` (`orchestra_gym.serving.client.RemoteEnv`) is a Gymnasium env over such a server.
The wire types are in `orchestra_gym.serving.protocol`. Needs the ``serve`` extra (``openenv``).
"""

__all__ = ["protocol", "server", "client"]
