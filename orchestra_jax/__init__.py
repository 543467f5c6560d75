"""orchestra_jax: a pure JAX/Flax trainer of orchestrator policies (Qwen3 architecture, GRPO)."""
