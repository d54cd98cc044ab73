"""The settings sidebar: its widgets, and turning what a client sends back into checked values.

Values arrive straight from the socket, so they are validated here like any other
input: a wrong type or an out-of-range number becomes a message, not a crash, and
only the known keys are read (a client cannot set engine arguments or paths). A refused change is neither
applied nor kept (app.py sends the sidebar in use back, which is what Chainlit stores with the chat); a reopened
or imported chat's values are each checked on their own, so one bad value never costs the others.
"""

from dataclasses import dataclass, replace

from chainlit.input_widget import Select, Slider, Switch, TextInput
from chainlit_door.patches import OVERSIZED
from pydantic import ValidationError

from engine import hardware, presets, sizing
from engine.presets import BUILT_IN
from engine.sampling import OPTIONS, Option
from engine.settings import CHAT_SAMPLING, MAX_REPLY_TOKENS, Sampling, Settings, describe
from ui.words import say, say_known

MAX_SYSTEM_PROMPT = 8000  # characters
SIDEBAR_KEYS = (*CHAT_SAMPLING, "system_prompt", "show_stats", "library")  # what a stored sidebar brings back



def preset_labels(settings: Settings) -> dict[str, str]:
    """Each preset the sidebar offers, by name, as "name: what it is for" in the chat's language (a custom
    preset's purpose is the user's own words)."""
    purposes = {"auto": say("preset.auto")} | {name: say_known(f"preset.{name}", preset.purpose)
                                               for name, preset in BUILT_IN.items()}
    if settings.custom_preset is not None:
        purposes["custom"] = settings.custom_preset.purpose
    return {name: say("preset_label", name=name, purpose=purpose) for name, purpose in purposes.items()}


@dataclass(frozen=True)
class ChatPreferences:
    sampling: Sampling
    system_prompt: str
    show_stats: bool
    preset: str
    library: bool = False  # answer from the user's library (ui/library.py)
    my_defaults: bool = False  # this chat's sampling is what the user's new chats start with (ui/my_defaults.py)


def widgets(settings: Settings, prefs: ChatPreferences, running: presets.Preset | None = None,
            locked: str | None = None, context: int | None = None) -> list:
    """The sidebar, showing this chat's preferences (and, as its preset, what runs).

    `locked` says why presets cannot be switched here (an engine that is not ours to size), and `context`
    is then that engine's context length.
    """
    sampling = prefs.sampling
    longest = context or (MAX_REPLY_TOKENS if locked else context_of(settings, prefs.preset, running))
    return [
        _preset_select(settings, prefs, locked, running),
        *(_slider(option, sampling, longest) for option in OPTIONS),
        TextInput(id="system_prompt", label=say("setting.system_prompt"), initial=prefs.system_prompt,
                  multiline=True),
        Switch(id="show_stats", label=say("setting.show_stats"), initial=prefs.show_stats),
        Switch(id="library", label=say("setting.library"), initial=prefs.library,
               description=say("setting.library.tip")),
        Switch(id="my_defaults", label=say("setting.my_defaults"), initial=prefs.my_defaults,
               description=say("setting.my_defaults.tip")),
    ]


def _slider(option: Option, sampling: Sampling, longest: int) -> Slider:
    """A sampler option's slider (engine/sampling.py), its words `setting.<name>` and `setting.<name>.tip`; the
    reply's limit goes only as far as the running preset's context."""
    high = longest if option.name == "max_tokens" else option.high
    low = option.low if option.slider_low is None else option.slider_low
    initial = min(getattr(sampling, option.name), high)
    return Slider(id=option.name, label=say(f"setting.{option.name}"), initial=initial, min=low, max=high,
                  step=option.step, description=say(f"setting.{option.name}.tip"))


def _preset_select(settings: Settings, prefs: ChatPreferences, locked: str | None,
                   running: presets.Preset | None) -> Select:
    if locked is not None:
        return Select(id="preset", label=say("setting.preset"), items={prefs.preset: prefs.preset},
                      initial_value=prefs.preset, disabled=True, description=locked)
    labels, note = preset_choices(settings, prefs.preset, running)
    purposes = preset_labels(settings)
    details = " · ".join(purposes[name] for name in labels)  # the panel shows a description as one paragraph
    return Select(id="preset", label=say("setting.preset"), items={v: k for k, v in labels.items()},
                  initial_value=prefs.preset if prefs.preset in labels else "auto",
                  description=" ".join(filter(None, [say("setting.preset.tip"), note])) + " · " + details)


def preset_choices(settings: Settings, chosen: str, running: presets.Preset | None) -> tuple[dict[str, str], str]:
    """The presets this device can run, each by a short label (a phone's width holds it; what each is for goes in
    the description), and a note on those left out or marked. `auto` says what it runs, or would pick here."""
    gpu = None if settings.device == "cpu" or hardware.cpu_build() else hardware.gpu()
    weights = sizing.weights_bytes(settings.model)
    free = None
    if gpu is not None:  # a switch first gives back what the running engine holds
        held = running is not None and running.device == "cuda"
        free = gpu.free_bytes + (sizing.footprint(running, weights).total if held else 0)
    offered, too_big = presets.runnable(free, weights, settings.custom_preset)
    picked = (running if chosen == "auto" and running is not None
              else presets.BUILT_IN["cpu"] if free is None else presets.pick_auto(free, weights))
    labels = {name: say("preset.too_big", name=name) if name in too_big else name for name in offered}
    if picked is not None:
        labels["auto"] = say("preset.auto_now", name=picked.name)
    if settings.device == "cpu":
        note = say("preset.cpu_only")
    elif gpu is None:
        note = say("preset.no_gpu")
    elif too_big:
        note = say("preset.too_big.note", gpu=gpu.name, free=free / sizing.GIB)
    else:
        note = ""
    return labels, note


def context_of(settings: Settings, preset_name: str, running: presets.Preset | None = None) -> int:
    """The longest reply the slider offers: the running preset's context, or the largest allowed before a start."""
    preset = running or (None if preset_name == "auto" else presets.lookup(preset_name, settings.custom_preset))
    return preset.max_model_len if preset else MAX_REPLY_TOKENS


def values(prefs: ChatPreferences) -> dict:
    """The sidebar's values of `prefs`, by widget id: what the history keeps of a chat's sidebar (`resumed` reads
    them back)."""
    return {"preset": prefs.preset, **prefs.sampling.model_dump(include=set(CHAT_SAMPLING)),
            "system_prompt": prefs.system_prompt, "show_stats": prefs.show_stats, "library": prefs.library,
            "my_defaults": prefs.my_defaults}


def defaults(settings: Settings, current_preset: str) -> ChatPreferences:
    """A new chat's preferences: the settings' sampling and system prompt, on `current_preset`."""
    return ChatPreferences(settings.sampling(), system_prompt(settings), True, current_preset)


def system_prompt(settings: Settings) -> str:
    """The system prompt a new chat starts with: the app's own default in the chat's language (a Chinese chat is
    told "你是一个乐于助人的助手。"), or the operator's CHAT_SYSTEM_PROMPT as written."""
    own = Settings.model_fields["system_prompt"].default
    return say("setting.system_prompt.default") if settings.system_prompt == own else settings.system_prompt


def resumed(values: dict, settings: Settings, running: str) -> ChatPreferences:
    """A reopened chat's preferences from its stored sidebar, on the preset that runs now: reopening a chat
    never restarts the engine that every chat shares. A stored value that no longer passes falls back to its
    default; the others are kept."""
    return replace(each_valid(values, defaults(settings, running), settings)[0], preset=running)


def each_valid(values: dict, base: ChatPreferences, settings: Settings) -> tuple[ChatPreferences, dict[str, str]]:
    """`base` with each of `values` that passes on its own (the preset aside: choosing one is a switch), and
    why each other was left out, by name: one bad value never costs the good ones."""
    prefs, refused = base, {}
    for key, value in values.items():
        if key in SIDEBAR_KEYS:
            try:
                prefs = parse({key: value}, prefs, settings)
            except ValueError as error:
                refused[key] = str(error)
    return prefs, refused


def parse(values: dict, previous: ChatPreferences, settings: Settings) -> ChatPreferences:
    """New preferences from the sidebar's values; raises ValueError with a readable message."""
    if OVERSIZED in values:  # the change was too large for the socket: only its size came
        raise ValueError(say("settings.oversized", mb=values[OVERSIZED] / 1e6, most=MAX_SYSTEM_PROMPT))
    try:
        sampling = Sampling(**{key: values[key] for key in CHAT_SAMPLING if key in values}
                            | _kept(previous.sampling, values))
    except ValidationError as error:
        raise ValueError(_refused_sampling(error)) from None
    system_prompt = values.get("system_prompt", previous.system_prompt)
    show_stats = values.get("show_stats", previous.show_stats)
    library = values.get("library", previous.library)
    my_defaults = values.get("my_defaults", previous.my_defaults)
    preset = values.get("preset", previous.preset)
    if not isinstance(system_prompt, str) or len(system_prompt) > MAX_SYSTEM_PROMPT:
        size = say("settings.system_prompt.size", size=len(system_prompt)) if isinstance(system_prompt, str) else ""
        raise ValueError(say("settings.system_prompt", most=MAX_SYSTEM_PROMPT, size=size))
    valid = presets.names(settings.custom_preset)
    switches = (show_stats, library, my_defaults)
    if not all(isinstance(s, bool) for s in switches) or (preset != previous.preset and preset not in valid):
        raise ValueError(say("settings.switches", valid=", ".join(valid)))
    return ChatPreferences(sampling, system_prompt, show_stats, preset, library, my_defaults)


def _refused_sampling(error: ValidationError) -> str:
    """Each sampler value refused, by its name in the sidebar, with its bounds and the value sent (cut short)."""
    options = {option.name: option for option in OPTIONS}
    items = [(options.get(str(item["loc"][0]) if item["loc"] else ""), item) for item in error.errors()]
    if not all(option for option, _ in items):  # a rule that is not a sampler's bounds: as pydantic words it
        return _short(describe(error, prefix=None))
    return " ".join(say("settings.sampling", name=say(f"setting.{option.name}").lower(), low=option.low,
                        high=option.high, value=_short(repr(item.get("input")), 60)) for option, item in items)


def _short(said: str, most: int = 300) -> str:
    """A refusal quotes the value it refused: a huge one is cut, so the notice stays readable."""
    return said if len(said) <= most else said[:most] + "…"


def _kept(sampling: Sampling, values: dict) -> dict:
    return {k: v for k, v in sampling.model_dump().items()
            if k not in values and k in CHAT_SAMPLING}
