"""Train a tiny causal LM with TRL's GRPOTrainer against `orchestra serve` on ToolScale (CPU, no hub).

    orchestra serve --env ToolOrchestra-ToolScale-v0 --env-kwargs '{"max_turns": 1}' --port 8000 &
    python examples/trl_grpo_toolscale.py --base-url http://127.0.0.1:8000 --steps 3

TRL's OpenEnv integration by ``rollout_func`` (TRL 1.x, ``GRPOTrainer(rollout_func=...)``): for each
prompt (an episode seed) the function opens one OpenEnv session per generation on the served env
(`orchestra_gym.serving.client.OrchestraClient`), resets it with that seed, lets the policy write its
turn from the end of the observation, steps the env with that text and returns the tokens, their
log-probabilities and the env's reward (``env_reward``); the reward function hands that reward to
GRPO unchanged, so the rewards TRL logs are the env's. The policy is a 1-layer Llama with a byte-level
BPE tokenizer trained here on a few lines, both saved to ``--model-dir`` with ``save_pretrained``.
Prints one JSON line per logged step and, at the end, ``{"env_rewards": [...], "logged_rewards": [...]}``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch
from datasets import Dataset
from tokenizers import Tokenizer, models, pre_tokenizers, decoders, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
from trl import GRPOConfig, GRPOTrainer

from orchestra_gym.serving.client import OrchestraClient, as_action

PROMPT_CHARS = 400  # the policy sees the observation's last characters (a tiny context)
CORPUS = ['<tool_call>\n{"name": "call_expert", "arguments": {"expert": "expert-1"}}\n</tool_call>',
          "<message>Your request has been completed.</message>", "find_client_id_by_email get_account expert-2 expert-3"]


def build_tiny_model(out: Path) -> Path:
    """A 1-layer Llama (hidden 32, random weights, seed 0) and a byte-level BPE tokenizer (vocab <= 320)
    trained on `CORPUS`, saved under `out`; returns `out`."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(CORPUS * 4, trainers.BpeTrainer(vocab_size=320, special_tokens=["<pad>", "</s>"],
                                                          initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    hf_tok = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="</s>", pad_token="<pad>")
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=len(hf_tok), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=1024,
                      eos_token_id=hf_tok.eos_token_id, pad_token_id=hf_tok.pad_token_id, bos_token_id=None)
    LlamaForCausalLM(cfg).save_pretrained(out)
    hf_tok.save_pretrained(out)
    return out


def make_rollout(base_url: str, env_rewards: list[float], max_new_tokens: int):
    """TRL's ``rollout_func(prompts, trainer)``: one served episode per prompt (an episode seed; TRL's
    sampler repeats each prompt ``num_generations`` times, so a GRPO group shares its seed)."""

    def rollout(prompts: list[str], trainer: GRPOTrainer) -> dict:
        tok, model = trainer.processing_class, trainer.model
        out = {"prompt_ids": [], "completion_ids": [], "logprobs": [], "env_reward": []}
        for prompt in prompts:
            seed = int(prompt.split()[-1])
            for _ in range(1):
                with OrchestraClient(base_url=base_url).sync() as env:
                    obs = env.reset(seed=seed).observation.text
                    ids = tok(obs[-PROMPT_CHARS:], return_tensors="pt").input_ids
                    with torch.no_grad():
                        gen = model.generate(ids, do_sample=True, max_new_tokens=max_new_tokens, output_scores=True,
                                             return_dict_in_generate=True, pad_token_id=tok.pad_token_id)
                    completion = gen.sequences[0, ids.shape[1]:]
                    logps = [torch.log_softmax(s[0].float(), -1)[t].item() for s, t in zip(gen.scores, completion)]
                    result = env.step(as_action(tok.decode(completion, skip_special_tokens=True)))
                reward = float(result.reward or 0.0)  # the env's reward for this turn (max_turns 1: the episode's)
                env_rewards.append(reward)
                out["prompt_ids"].append(ids[0].tolist())
                out["completion_ids"].append(completion.tolist())
                out["logprobs"].append(logps)
                out["env_reward"].append(reward)
        return out

    return rollout


def env_reward(completions: list, env_reward: list[float], **_: object) -> list[float]:
    """GRPO's reward: the served env's reward, unchanged."""
    return list(env_reward)


def parse_args(argv: "list[str] | None" = None) -> argparse.Namespace:
    """The example's arguments; every folder it writes is under ``--output-dir`` by default (``runs/``,
    which git ignores), so a run leaves nothing untracked in the working tree."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--base-url", default="http://127.0.0.1:8000")
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--model-dir", help="the tiny model (built there when missing; default OUTPUT_DIR/tiny-policy)")
    p.add_argument("--output-dir", default="runs/trl-grpo")
    p.add_argument("--max-new-tokens", type=int, default=16)
    args = p.parse_args(argv)
    if args.model_dir is None:
        args.model_dir = str(Path(args.output_dir) / "tiny-policy")
    return args


def main(argv: "list[str] | None" = None) -> dict:
    args = parse_args(argv)
    model_dir = Path(args.model_dir)
    if not (model_dir / "config.json").exists():
        build_tiny_model(model_dir)
    tok = PreTrainedTokenizerFast.from_pretrained(model_dir)
    config = GRPOConfig(output_dir=args.output_dir, max_steps=args.steps, per_device_train_batch_size=4,
                        num_generations=4, max_completion_length=args.max_new_tokens, learning_rate=1e-3,
                        logging_steps=1, report_to="none", save_strategy="no", use_cpu=True, bf16=False,
                        seed=0, dataloader_num_workers=0)
    env_rewards: list[float] = []
    trainer = GRPOTrainer(model=str(model_dir), processing_class=tok, reward_funcs=env_reward, args=config,
                          train_dataset=Dataset.from_dict({"prompt": [f"episode seed {i}" for i in range(64)]}),
                          rollout_func=make_rollout(args.base_url, env_rewards, args.max_new_tokens))
    trainer.train()
    logged = [h["reward"] for h in trainer.state.log_history if "reward" in h]
    for h in trainer.state.log_history:
        print(json.dumps({k: v for k, v in h.items() if isinstance(v, (int, float))}))
    summary = {"env_rewards": env_rewards, "logged_rewards": logged}
    print(json.dumps(summary))
    return summary


if __name__ == "__main__":
    main()
