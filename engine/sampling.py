"""The sampler options a chat chooses, each declared once (`OPTIONS`): its range, default, type, the sidebar's step
and lowest value, and what it is. Everything else is made from this table: the `Sampling` model and the settings'
defaults (engine/settings.py, `CHAT_<NAME>` in the environment), the sidebar's sliders and their words
(ui/sidebar.py; `setting.<name>` and `setting.<name>.tip` in ui/words/settings.py), vLLM's `SamplingParams`
(engine/requests.py) and the remote server's request body (engine/remote.py) through `engine_values`, the export and
import (history/exchange.py) and a user's own defaults (ui/my_defaults.py) through `CHAT_SAMPLING`.
tests/test_sampling.py checks that every option reaches each of them.

A new option is one line here and its words; its name must be the one vLLM's `SamplingParams` and the OpenAI
API's body take.
"""

from dataclasses import dataclass
from typing import Annotated

from pydantic import ConfigDict, Field, create_model

MAX_REPLY_TOKENS = 8192


@dataclass(frozen=True)
class Option:
    name: str
    default: float
    low: float
    high: float
    step: float  # the sidebar slider's
    about: str
    integer: bool = False
    low_open: bool = False  # the lowest value itself is refused (top p 0 samples nothing)
    slider_low: float | None = None  # where the slider starts, when not at `low`

    def annotation(self):
        bounds = {"gt" if self.low_open else "ge": self.low, "le": self.high}
        return Annotated[int if self.integer else float, Field(**bounds, description=self.about)]


OPTIONS = (
    Option("temperature", 0.8, 0.0, 2.0, 0.05, "Sampling temperature; 0 is greedy."),
    Option("top_p", 0.8, 0.0, 1.0, 0.05, "Nucleus sampling: keep the smallest set of tokens with this much "
                                         "probability.", low_open=True, slider_low=0.05),
    Option("max_tokens", 1024, 1, MAX_REPLY_TOKENS, 16, "Most new tokens in one reply.", integer=True,
           slider_low=16),
    Option("repetition_penalty", 1.0, 1.0, 2.0, 0.05, "Above 1, tokens already in the chat or the reply become "
                                                      "less likely to come again; 1 leaves them as they are."),
)
BY_NAME = {option.name: option for option in OPTIONS}
CHAT_SAMPLING = tuple(BY_NAME)  # kept with a chat, its export, and a user's own defaults
# Not the engine's as they are: the reply's limit is what the context leaves (engine/chat.py), and top p may go to
# the CPU engine's own processor (engine/top_p.py)
BY_THE_ENGINE = ("max_tokens",)


def fields() -> dict:
    """{name: (annotation, default)} of every option, for a pydantic model."""
    return {o.name: (o.annotation(), int(o.default) if o.integer else o.default) for o in OPTIONS}


Sampling = create_model(
    "Sampling", __config__=ConfigDict(extra="forbid", frozen=True), __doc__="How one reply is sampled. Unknown "
    "keys are refused, so a client cannot smuggle engine options.", **fields(),
    ignore_eos=(bool, Field(False, description="Generate exactly max_tokens (benchmarks only).")),
    seed=(int | None, Field(None, ge=0, le=2**31 - 1, description="Fixed seed for reproducible sampling.")))


def engine_values(sampling) -> dict:
    """The options as vLLM's `SamplingParams` and the OpenAI API's body take them (the reply's limit apart)."""
    return {name: getattr(sampling, name) for name in CHAT_SAMPLING if name not in BY_THE_ENGINE}
