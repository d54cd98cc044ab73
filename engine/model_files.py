"""What a model folder holds, and what vLLM must be told to serve it without the repo's remote code.

`baidu/ERNIE-4.5-0.3B-PT` has had two layouts. Since 2025-07-28 `config.json` names `Ernie4_5ForCausalLM` and the
tokenizer is `tokenizer.json` beside `tokenizer.model`. Its first layout (2025-06-30 to 07-28; what ModelScope's copy
held in July 2025, and what a hub cache from then still holds) names `Ernie4_5_ForCausalLM` with an `auto_map` to
remote code, and has only `tokenizer.model`. The weights are the same: vLLM renamed the class (its PR 21735), so the
old name is served as the new one (`hf_overrides`), and transformers builds the tokenizer from `tokenizer.model`
by itself (sentencepiece and protobuf, both in the locks). No remote code runs.
"""

import json
from pathlib import Path

from engine.errors import DamagedModelError

# Architecture names of the repo's first layout -> the class vLLM and transformers serve them with now.
RENAMED = {"Ernie4_5_ForCausalLM": "Ernie4_5ForCausalLM"}
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model")


def architectures(folder: Path) -> list[str]:
    """The architectures `config.json` names, as vLLM knows them today; none where there is no readable config."""
    try:
        names = json.loads((Path(folder) / "config.json").read_text()).get("architectures") or []
    except (OSError, ValueError):
        return []
    return [RENAMED.get(name, name) for name in names]


def engine_overrides(folder: Path) -> dict:
    """Engine arguments a folder of the first layout needs: its class under today's name."""
    try:
        named = json.loads((Path(folder) / "config.json").read_text()).get("architectures") or []
    except (OSError, ValueError):
        return {}
    if not any(name in RENAMED for name in named):
        return {}
    # without its auto_map, vLLM does not look for the remote code it may not run (a warning per class)
    return {"hf_overrides": {"architectures": [RENAMED.get(name, name) for name in named], "auto_map": {}}}


def check_tokenizer(model: str, folder: Path) -> None:
    """A model folder with a config but neither tokenizer file cannot be served: say which files are missing."""
    folder = Path(folder)
    if (folder / "config.json").is_file() and not any((folder / name).is_file() for name in TOKENIZER_FILES):
        raise DamagedModelError(model, f"{folder} has config.json but no tokenizer: neither "
                                       f"{' nor '.join(TOKENIZER_FILES)} is there")
