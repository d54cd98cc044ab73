"""Model folders laid out as the files users download of `baidu/ERNIE-4.5-0.3B-PT`, in a small model shape.

The repo has had two layouts, and a user may hold either (a hub cache or ModelScope's copy from July 2025 holds
the first):
- `first`: `config.json` names `Ernie4_5_ForCausalLM` with an `auto_map` to remote code, the tokenizer is a
  remote-code `Ernie4_5_Tokenizer` over `tokenizer.model` (SentencePiece), no `tokenizer.json`, the chat template
  inside `tokenizer_config.json`;
- `current` (since 2025-07-28): `Ernie4_5ForCausalLM`, no `auto_map`, `tokenizer.json` beside `tokenizer.model`,
  `tokenizer_config.json` naming `LlamaTokenizer`, the template in `chat_template.jinja`, plus
  `added_tokens.json` and `special_tokens_map.json`.

Both get a SentencePiece model trained here with ERNIE's id layout (0 `<unk>`, 1 `<s>`, 2 `</s>`, 3-12 the digits,
13-268 the bytes, `<|end_of_sentence|>` 100272, `<|begin_of_sentence|>` 100273, 103,424 pieces) and random weights
whose sampled replies end with `<|end_of_sentence|>` after some 20 tokens, never with `</s>`. The first
layout's remote-code files are present but raise if anything executes them: the app must never need them.

    python -m harness.ernie_layouts first models/ernie-first-layout
"""

import io
import json
import sys
from pathlib import Path

VOCAB_SIZE = 103_424
END_OF_SENTENCE, BEGIN_OF_SENTENCE = "<|end_of_sentence|>", "<|begin_of_sentence|>"
END_ID, BEGIN_ID = 100_272, 100_273
UNK, BOS, EOS = "<unk>", "<s>", "</s>"
LAYOUTS = ("first", "current")
TRAINED_FROM, TRAINED_TO = 269, 800  # the SentencePiece model's own pieces, after the bytes
TEMPERATURE = 0.8  # the chats' default, where the end token's chances are set
END_AFTER_OTHERS, END_AFTER_CLOSING = 0.002, 0.5

# The repo's template, as it renders: the begin token, the system text and a line end, "User: " turns, "Assistant: "
# turns closed by the end token, and "Assistant: " to ask for the reply.
CHAT_TEMPLATE = """{%- if not add_generation_prompt is defined -%}{%- set add_generation_prompt = true -%}{%- endif -%}
{%- if not cls_token is defined -%}{%- set cls_token = "<|begin_of_sentence|>" -%}{%- endif -%}
{%- if not sep_token is defined -%}{%- set sep_token = "<|end_of_sentence|>" -%}{%- endif -%}
{{- cls_token -}}
{%- for message in messages -%}
{%- if message["role"] == "user" -%}{{- "User: " + message["content"] + "\\n" -}}
{%- elif message["role"] == "assistant" -%}{{- "Assistant: " + message["content"] + sep_token -}}
{%- elif message["role"] == "system" -%}{{- message["content"] + "\\n" -}}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- "Assistant: " -}}{%- endif -%}"""

REMOTE_CODE = ('raise RuntimeError("remote code of the first layout was executed: the app must serve this model '
               'without it")\n')
SPECIAL_TOKENS = {"bos_token": BOS, "eos_token": EOS, "unk_token": UNK, "pad_token": UNK,
                  "cls_token": BEGIN_OF_SENTENCE, "sep_token": END_OF_SENTENCE}
GENERATION = {"do_sample": True, "temperature": 0.8, "top_p": 0.8, "bos_token_id": 1, "eos_token_id": 2,
              "pad_token_id": 0, "repetition_penalty": 1.0, "frequency_penalty": 0.0, "presence_penalty": 0.0}


def write(layout: str, folder: Path) -> Path:
    """Write `layout` ("first" or "current") into `folder`; returns the folder."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tokenizer.model").write_bytes(sentencepiece_model())
    architecture = "Ernie4_5ForCausalLM" if layout == "current" else "Ernie4_5_ForCausalLM"
    write_weights(folder, architecture)
    (folder / "generation_config.json").write_text(json.dumps(GENERATION, indent=2))
    added = {BEGIN_OF_SENTENCE: BEGIN_ID, END_OF_SENTENCE: END_ID}
    decoder = {str(i): {"content": t, "lstrip": False, "normalized": False, "rstrip": False, "single_word": False,
                        "special": True} for t, i in [(UNK, 0), (BOS, 1), (EOS, 2), *added.items()]}
    config = {**SPECIAL_TOKENS, "added_tokens_decoder": decoder, "model_max_length": 131072,
              "add_bos_token": False, "add_eos_token": False, "clean_up_tokenization_spaces": False,
              "legacy": True, "spaces_between_special_tokens": False}
    if layout == "first":
        _first_layout_code(folder)
        config.update(tokenizer_class="Ernie4_5_Tokenizer", chat_template=CHAT_TEMPLATE,
                      auto_map={"AutoTokenizer": ["tokenization_ernie4_5.Ernie4_5_Tokenizer", None]})
        (folder / "tokenizer_config.json").write_text(json.dumps(config, indent=2, ensure_ascii=False))
    else:
        (folder / "tokenizer_config.json").write_text(json.dumps({**config, "tokenizer_class": "LlamaTokenizer"},
                                                                 indent=2, ensure_ascii=False))
        (folder / "chat_template.jinja").write_text(CHAT_TEMPLATE)
        (folder / "added_tokens.json").write_text(json.dumps(added, indent=2))
        (folder / "special_tokens_map.json").write_text(json.dumps(SPECIAL_TOKENS, indent=2))
        _tokenizer_json(folder)
    return folder


def sentencepiece_model() -> bytes:
    """A SentencePiece BPE model trained on the tiny model's corpus, padded to ERNIE's ids and vocabulary size."""
    import sentencepiece as spm
    from sentencepiece import sentencepiece_model_pb2 as model_pb2

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
    from make_tiny_model import corpus

    trained = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(corpus()), model_writer=trained, vocab_size=800, model_type="bpe",
        byte_fallback=True, user_defined_symbols=[str(d) for d in range(10)], split_digits=True,
        normalization_rule_name="identity", add_dummy_prefix=False, remove_extra_whitespaces=False,
        unk_id=0, bos_id=1, eos_id=2, pad_id=-1, character_coverage=1.0, minloglevel=2)
    model = model_pb2.ModelProto()
    model.ParseFromString(trained.getvalue())
    unused = model_pb2.ModelProto.SentencePiece.UNUSED
    control = model_pb2.ModelProto.SentencePiece.CONTROL
    while len(model.pieces) < VOCAB_SIZE:
        index = len(model.pieces)
        name = {END_ID: END_OF_SENTENCE, BEGIN_ID: BEGIN_OF_SENTENCE}.get(index, f"<unused:{index}>")
        model.pieces.add(piece=name, score=0.0, type=control if index in (END_ID, BEGIN_ID) else unused)
    return model.SerializeToString()


def write_weights(folder: Path, architecture: str) -> None:
    """Random weights in a small shape with the real vocabulary, whose replies stop after a few tokens.

    The residual stream's dimensions 0 and 1 carry the input token's own row (the rest is small), and the
    embeddings are tied: so each next token's logit is set by the last token's row. Replies use the trained
    pieces; after one of a hundredth of them (`_closing`) the end token is likely, after the others nearly never,
    so no reply ends before its first token and few run past 100."""
    import torch
    from transformers import Ernie4_5Config, Ernie4_5ForCausalLM

    config = Ernie4_5Config(vocab_size=VOCAB_SIZE, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                            num_attention_heads=2, num_key_value_heads=1, head_dim=64, max_position_embeddings=32768,
                            tie_word_embeddings=True, bos_token_id=1, eos_token_id=2, pad_token_id=0,
                            torch_dtype="bfloat16")
    torch.manual_seed(0)
    model = Ernie4_5ForCausalLM(config)
    with torch.no_grad():
        rows = model.get_input_embeddings().weight
        rows[:, 2:] *= 0.01
        rows[:, :2] = torch.tensor([-40.0, 0.0])  # nothing but the reply's pieces and the end token is chosen
        words = list(range(3, 13)) + list(range(TRAINED_FROM, TRAINED_TO))
        rows[words, 0] = 1.0
        rows[_closing(), 1] = 1.0
        rows[END_ID] = 0.0
        rows[END_ID, :2] = _end_row(model, words)
    model.to(torch.bfloat16).save_pretrained(folder)
    saved = json.loads((folder / "config.json").read_text())
    saved["architectures"] = [architecture]
    if architecture == "Ernie4_5_ForCausalLM":
        saved["auto_map"] = {"AutoConfig": "configuration_ernie4_5.Ernie4_5_Config",
                             "AutoModel": "modeling_ernie4_5.Ernie4_5_Model",
                             "AutoModelForCausalLM": "modeling_ernie4_5.Ernie4_5_ForCausalLM"}
    (folder / "config.json").write_text(json.dumps(saved, indent=2))


def _closing() -> list[int]:
    """The pieces after which a reply is likely to end."""
    return list(range(TRAINED_FROM, TRAINED_TO, 100))


def _end_row(model, words: list[int]):
    """The end token's dimensions 0 and 1, solved so that its probability at the chats' temperature is
    END_AFTER_OTHERS after an ordinary piece and END_AFTER_CLOSING after a closing one."""
    import torch

    ordinary = next(w for w in words if w >= TRAINED_FROM and w not in set(_closing()))
    hidden, rest = [], []
    for last in (ordinary, _closing()[1]):
        ids = torch.tensor([[BEGIN_ID, ordinary + 1, ordinary + 2, last]])
        state = model.model(input_ids=ids).last_hidden_state[0, -1].float()
        logits = model.lm_head(state.to(model.lm_head.weight.dtype)).float() / TEMPERATURE
        logits[END_ID] = -float("inf")
        hidden.append(state[:2] / TEMPERATURE)
        rest.append(torch.logsumexp(logits, 0))
    wanted = [rest[0] + _logit(END_AFTER_OTHERS), rest[1] + _logit(END_AFTER_CLOSING)]
    return torch.linalg.solve(torch.stack(hidden), torch.stack(wanted))


def _logit(p: float) -> float:
    import math

    return math.log(p / (1 - p))


def _first_layout_code(folder: Path) -> None:
    for name in ("tokenization_ernie4_5.py", "configuration_ernie4_5.py", "modeling_ernie4_5.py"):
        (folder / name).write_text(REMOTE_CODE)


def _tokenizer_json(folder: Path) -> None:
    """The current layout's `tokenizer.json`: the same SentencePiece model as a fast tokenizer."""
    import tempfile

    from transformers import AutoTokenizer

    with tempfile.TemporaryDirectory() as scratch:
        tokenizer = AutoTokenizer.from_pretrained(folder)
        tokenizer.save_pretrained(scratch)
        (folder / "tokenizer.json").write_bytes((Path(scratch) / "tokenizer.json").read_bytes())


if __name__ == "__main__":
    write(sys.argv[1], Path(sys.argv[2]))
    print(f"ERNIE's {sys.argv[1]} layout written to {sys.argv[2]}")
