"""orchestra_gym: Gymnasium environments in which a policy orchestrates tools and models.

Importing this package registers every environment id with Gymnasium and nothing else: no JAX,
no model and no data is loaded here (environment modules are imported lazily by `gym.make`).

Three ways to make an environment (Gymnasium 1.x has no plugin entry points)::

    import gymnasium as gym
    import orchestra_gym                                    # 1. import registers the ids
    env = gym.make("ToolOrchestra-ToolScale-v0")

    gym.register_envs(orchestra_gym)                        # 2. same, and keeps linters quiet

    env = gym.make("orchestra_gym:ToolOrchestra-ToolScale-v0")  # 3. gym imports the module itself
"""

from orchestra_gym.registration import ENV_IDS, register_all

__version__ = "0.1.0"
__all__ = ["ENV_IDS", "__version__"]

register_all()
