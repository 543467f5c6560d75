"""orchestra_jax: pure JAX/Flax-nnx GRPO trainer of a Qwen3 orchestrator policy.

Modules, in the order of the data flow: `config` / `train_config` (model and training configs),
`model` (Qwen3), `weights` (HF checkpoints), `tokenizer` (the one chat stack), `sharding`,
`sampler` (KV-cache generation), `rollout` (episodes against orchestra_gym envs), `batch`
(`grpo_batch`: rewards -> advantages -> the trainer batch), `grpo` (the loss), `train_step` (pure
jitted steps), `policy` (a run's tokenizer, policy and envs), `train` (the loop), `plots`,
`checkpoint` (orbax), `runs` (a trained run folder read back), `agents` (a trained run as an orchestra_gym
agent), `export` (a run as a Hugging Face directory), `cli` (the trainer's commands of `orchestra`).

Import-light on purpose: submodules are imported explicitly by their users, so `import
orchestra_jax` does not import jax.
"""

__all__: list[str] = []
