"""Environment classes (imported lazily by `gym.make` through the registry's entry points)."""
