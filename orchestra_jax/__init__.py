"""orchestra_jax: pure JAX/Flax-nnx GRPO trainer of a Qwen3 orchestrator policy.

Import-light on purpose: submodules (`config`, `model`, `weights`, `tokenizer`, `sharding`,
`sampler`, ...) are imported explicitly by their users, so `import orchestra_jax` does not
import jax.
"""

__all__: list[str] = []
