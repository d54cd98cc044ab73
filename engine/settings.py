"""The app's settings: one validated object, read from the environment and `.env`.

Every variable starts with `CHAT_` (e.g. `CHAT_PRESET=4gb`). Each field has a
description and bounds; a bad value stops the app at start with the variable,
the rule, the value and the fix. Per-message sampling (`Sampling`) shares the
same bounds, so the sidebar and the environment agree on what is allowed.
"""

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, SecretStr, ValidationError, create_model
from pydantic_settings import BaseSettings, SettingsConfigDict

from engine.admission import default_share
from engine.errors import SettingsError
from engine import sampling as sampling_options
from engine.presets import BUILT_IN, Preset
from engine.sampling import CHAT_SAMPLING, MAX_REPLY_TOKENS, Sampling  # noqa: F401 (the settings' names for them)

ENV_PREFIX = "CHAT_"

SystemPrompt = Annotated[str, Field(max_length=8000, description="Instructions put before every chat.")]
# The sampler options' defaults, one field each (`CHAT_TEMPERATURE`, ...), made from engine/sampling.py's table
_SamplingDefaults = create_model("_SamplingDefaults", __base__=BaseSettings, **sampling_options.fields())


class Settings(_SamplingDefaults):
    """Process-wide settings, fixed at start."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, env_file=".env", extra="ignore", frozen=True,
    )

    model: str = Field("baidu/ERNIE-4.5-0.3B-PT", min_length=1, description="Hugging Face model id or local folder.")
    preset: str = Field("auto", min_length=1, description=f"Memory preset: auto, {', '.join(BUILT_IN)} or custom.")
    custom_preset: Preset | None = Field(None, description="JSON of a preset named 'custom' (see README).")
    device: Literal["auto", "cuda", "cpu"] = Field("auto", description="Where the model runs; auto picks the GPU "
                                                                       "when there is one.")
    dtype: Literal["auto", "bfloat16", "float16", "float32"] = Field(
        "auto", description="Weights and activations; auto is bfloat16, or float16 on cards older than compute "
                            "capability 8.0, which have no bfloat16, and float32 on processors without AVX-512 "
                            "BF16 or AMX, which have no bf16 matmul.")
    model_source: Literal["huggingface", "modelscope"] = Field(
        "huggingface", description="Where a model id is downloaded from: the Hugging Face hub (or the mirror "
                                   "HF_ENDPOINT names), or ModelScope (ERNIE's id there is PaddlePaddle/...).")
    download_dir: Path | None = Field(None, description="Where downloaded weights are cached (default: the Hugging "
                                                        "Face cache, or ModelScope's).")
    system_prompt: SystemPrompt = "You are a helpful assistant."
    gpus: int = Field(1, ge=1, le=8, description="How many GPUs the embedded engine uses; a preset's sizes are per "
                                                 "GPU.")
    parallel: Literal["data", "tensor"] = Field(
        "data", description="With several GPUs: 'data' runs a copy of the model on each (more replies at once); "
                            "'tensor' splits one copy over them (for a model too big for one card).")
    warmup: bool = Field(True, description="Run a few requests after start so the first message is not slow.")
    idle_minutes: float = Field(10.0, ge=0.0, le=1440.0, description="Minutes with no reply and no API request "
                                "after which the engine gives its memory back (a GPU engine sleeps, a CPU engine "
                                "stops); the next message or request wakes it. 0 keeps it always on.")
    engine_url: str | None = Field(
        None, pattern=r"^https?://[^/\s]+(/.*)?$", description="The OpenAI-compatible URL of a running vLLM server "
        "(e.g. http://gpu-host:8000/v1) to use instead of an engine in this process.")
    engine_key: SecretStr | None = Field(None, description="The API key that vLLM server expects, if any.")
    api: bool = Field(True, description="Serve the OpenAI-compatible API (/v1) from the chat server, on the same "
                                        "engine.")
    api_key: SecretStr | None = Field(
        None, min_length=8, description="The key API clients must send (Authorization: Bearer); required when the "
                                        "server listens on any address other than loopback.")
    user_share: int | None = Field(
        None, ge=0, le=1024, description="The most sequences one user (a chat's user or an API key's) runs at once, "
        "chats and API together; more wait for their own earlier requests to end. Unset: the preset's slots but an "
        "eighth. 0 turns shares and chat-first priority off (first come, first served).")
    api_wait_s: float = Field(120.0, ge=0.0, le=600.0, description="How long an API request waits for a starting or "
                                                                 "switching engine before a 503 with Retry-After.")
    history: bool = Field(True, description="Keep chats in a database and list them in the sidebar; false keeps them "
                                            "in memory only, lost at a restart.")
    history_db: Path = Field(Path("data/chats.db"), description="The SQLite file that holds the chats (made on first "
                                                                "start); its folder is the app's data folder.")
    database_url: str | None = Field(
        None, pattern=r"^postgres(ql)?(\+asyncpg)?://\S+$", description="A PostgreSQL database for the history "
        "instead of the SQLite file (postgresql://user:password@host/db), so several app processes share one history.")

    allowed_hosts: str = Field(
        "", pattern=r"^[\w.\-*\[\]:, ]*$", description="Names besides localhost that the server answers to, "
        "comma-separated (a name of this machine in /etc/hosts, a reverse proxy's public name); * answers any.")
    allowed_origins: str = Field(
        "", pattern=r"^[\w.\-*/:, \[\]]*$", description="Web pages of other origins that may call the server "
        "from a browser, comma-separated (e.g. http://localhost:3000 for a web app of your own that uses the API).")
    admins: str = Field(
        "", max_length=2000, description="The operators: user names, comma-separated, who see every user's usage "
        "(the chat's Usage command); everyone else sees their own. On loopback the local user is 'local'.")

    @property
    def data_folder(self) -> Path:
        """Where this app keeps its own files: the history's folder (also the sign-in secret, the engine's marks)."""
        return self.history_db.parent

    @property
    def allowed_host_list(self) -> list[str]:
        return _split(self.allowed_hosts)

    @property
    def allowed_origin_list(self) -> list[str]:
        return _split(self.allowed_origins)

    @property
    def admin_list(self) -> list[str]:
        return _split(self.admins)

    @property
    def fair_share(self) -> bool:
        """Whether users have shares and chats go first (CHAT_USER_SHARE is not 0)."""
        return self.user_share != 0

    def share(self, max_num_seqs: int | None) -> int | None:
        """The user share for an engine of `max_num_seqs` slots (None: not known, as for a remote server, where only
        a share set in CHAT_USER_SHARE applies); None when there is none."""
        if self.user_share == 0:
            return None
        if self.user_share is not None:
            return self.user_share
        return None if max_num_seqs is None else default_share(max_num_seqs)

    def sampling(self) -> Sampling:
        return Sampling(**{name: getattr(self, name) for name in CHAT_SAMPLING})


def _split(names: str) -> list[str]:
    return [name.strip() for name in names.split(",") if name.strip()]


def describe(error: ValidationError, prefix: str | None = ENV_PREFIX) -> str:
    """One line per broken rule: the variable (or, without a prefix, the setting), the rule and the value."""
    lines = []
    for item in error.errors():
        field = "_".join(str(part) for part in item["loc"])
        name = (prefix + field).upper() if prefix else field.replace("_", " ")
        lines.append(f"{name}: {item['msg']}, got {item.get('input')!r}.")
    return " ".join(lines)


def load_settings(**overrides) -> Settings:
    """Read the settings, turning validation errors into one message a user can act on."""
    try:
        return Settings(**overrides)
    except ValidationError as error:
        raise SettingsError(describe(error), "Fix it in .env or the environment (see README, 'Settings').") from None
