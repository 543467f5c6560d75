"""Task loaders: HLE, FRAMES, tau2, ToolScale -> `orchestra_gym.types.Task`."""
