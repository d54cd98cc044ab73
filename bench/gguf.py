"""GGUF copies of our models, for the peers that load llama.cpp's format (llama-server).

llama.cpp's converter (from bench/llama_cpp.sh) reads an ERNIE-4.5 vocabulary only
from a SentencePiece `tokenizer.model`, which the real baidu model has and
scripts/make_tiny_model.py's random models lack. For those, a staging folder links
the weights and json files and adds a SentencePiece model whose pieces are the
tokenizer.json vocabulary in id order: the benchmark sends token ids, so the
vocabulary only has to load, keep the embedding's size and map each id to its word.
Conversions are cached and redone when the weights are newer.

    .venv/bin/python -m bench.gguf models/ernie-0.3b-random --outtype q8_0   # prints the .gguf path
"""

import argparse
import json
import subprocess
import sys
from pathlib import Path

from bench.llama_server import llama_cpp_home

CACHE = Path.home() / ".cache" / "ernie-chat" / "gguf"


def convert(model_dir: Path, outtype: str, cache: Path = CACHE) -> Path:
    """The GGUF of `model_dir` in `outtype` ("bf16" or "q8_0"), converted unless a newer one is cached."""
    model_dir = model_dir.resolve()
    out = cache / f"{model_dir.name}-{outtype}.gguf"
    weights = max(f.stat().st_mtime for f in model_dir.glob("*.safetensors"))
    if out.exists() and out.stat().st_mtime > weights:
        return out
    cache.mkdir(parents=True, exist_ok=True)
    home = llama_cpp_home()
    source = model_dir
    if not (model_dir / "tokenizer.model").exists():
        source = stage(model_dir, cache / f"{model_dir.name}-staging")
    part = out.with_name(out.name + ".part")
    subprocess.run([sys.executable, f"{home}/convert/convert_hf_to_gguf.py", str(source), "--outtype", outtype,
                    "--outfile", str(part)], check=True)
    part.replace(out)
    return out


def stage(model_dir: Path, staging: Path) -> Path:
    """`staging` with links to `model_dir`'s weights and json files and a SentencePiece tokenizer.model."""
    staging.mkdir(parents=True, exist_ok=True)
    for old in staging.iterdir():
        old.unlink()
    for f in model_dir.iterdir():
        if f.suffix in (".safetensors", ".json", ".jinja"):
            (staging / f.name).symlink_to(f)
    write_sentencepiece(model_dir, staging / "tokenizer.model")
    return staging


def write_sentencepiece(model_dir: Path, path: Path) -> None:
    """tokenizer.json's vocabulary as a SentencePiece model: the same ids, one piece per embedding row."""
    from sentencepiece import SentencePieceProcessor
    from sentencepiece import sentencepiece_model_pb2 as spm

    tok = json.loads((model_dir / "tokenizer.json").read_text())
    vocab = {**tok["model"]["vocab"], **{t["content"]: t["id"] for t in tok["added_tokens"]}}
    tokens = sorted(vocab, key=vocab.get)
    size = json.loads((model_dir / "config.json").read_text())["vocab_size"]
    if [vocab[t] for t in tokens] != list(range(size)):
        raise ValueError(f"{model_dir}: tokenizer.json's ids are not 0..{size - 1} (the config's vocab_size)")
    special = {t["content"] for t in tok["added_tokens"] if t["special"]}
    kind = spm.ModelProto.SentencePiece
    proto = spm.ModelProto()
    proto.normalizer_spec.name = "identity"
    for token in tokens:
        if token == tok["model"].get("unk_token"):
            proto.pieces.add(piece=token, score=0.0, type=kind.UNKNOWN)
        elif token in special:
            proto.pieces.add(piece=token, score=0.0, type=kind.CONTROL)
        else:
            proto.pieces.add(piece="▁" + token, score=0.0, type=kind.NORMAL)
    path.write_bytes(proto.SerializeToString())
    if SentencePieceProcessor(model_file=str(path)).get_piece_size() != size:
        raise ValueError(f"{path}: SentencePiece does not load {size} pieces")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model_dir", type=Path)
    parser.add_argument("--outtype", choices=["bf16", "q8_0"], default="bf16")
    parser.add_argument("--cache", type=Path, default=CACHE)
    args = parser.parse_args()
    print(convert(args.model_dir, args.outtype, args.cache))


if __name__ == "__main__":
    main()
