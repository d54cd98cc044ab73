"""Every sampler option declared in engine/sampling.py reaches each place made from it: the settings (and their
environment variable), the sidebar with its words in both languages, what the sidebar's values parse to, vLLM's
`SamplingParams`, the remote server's request body, the export and a user's own defaults."""

import pytest

from engine.remote import RemoteEngine
from engine.sampling import BY_THE_ENGINE, CHAT_SAMPLING, OPTIONS, Sampling, engine_values
from engine.settings import load_settings
from harness.fake_vllm import FakeVllm
from ui import my_defaults, sidebar
from ui.words import TEXTS

# An unusual value of each option (inside its range, not its default): it must come out where it went in
ODD = {"temperature": 0.35, "top_p": 0.55, "max_tokens": 48, "repetition_penalty": 1.25}


def test_every_option_has_an_odd_value_here_and_a_default_inside_its_range():
    assert set(ODD) == set(CHAT_SAMPLING), "a new option needs its odd value above"
    for option in OPTIONS:
        assert option.low <= option.default <= option.high and ODD[option.name] != option.default


@pytest.mark.parametrize("name", CHAT_SAMPLING)
def test_an_option_is_a_setting_a_slider_with_words_and_a_parsed_value(name, monkeypatch):
    monkeypatch.setenv(f"CHAT_{name.upper()}", str(ODD[name]))
    settings = load_settings()
    assert getattr(settings.sampling(), name) == ODD[name], "CHAT_<NAME> sets its default"
    prefs = sidebar.defaults(settings, "cpu")
    slider = next(w for w in sidebar.widgets(settings, prefs) if w.id == name)
    assert slider.initial == ODD[name] and slider.label and slider.description
    for language in (0, 1):
        assert TEXTS[f"setting.{name}"][language] and TEXTS[f"setting.{name}.tip"][language]
    parsed = sidebar.parse({name: ODD[name]}, sidebar.defaults(load_settings(), "cpu"), settings)
    assert getattr(parsed.sampling, name) == ODD[name]
    assert name in my_defaults.KEPT


@pytest.mark.parametrize("name", [n for n in CHAT_SAMPLING if n not in BY_THE_ENGINE])
def test_an_option_reaches_vllms_sampling_params(name):
    from vllm import SamplingParams

    params = SamplingParams(**engine_values(Sampling(**{name: ODD[name]})))
    assert getattr(params, name) == pytest.approx(ODD[name])


async def test_every_option_reaches_the_remote_servers_request_body():
    server = FakeVllm(reply_tokens=2)
    engine = RemoteEngine(load_settings(engine_url="http://fake-vllm/v1"), transport=server.transport)
    try:
        await engine.ensure_started()
        async for _ in engine.stream([{"role": "user", "content": "Hi"}], Sampling(**ODD)):
            pass
    finally:
        engine.shutdown()
    body = server.requests[-1]
    assert all(body[name] == pytest.approx(ODD[name]) for name in CHAT_SAMPLING if name not in BY_THE_ENGINE), body
    assert body["max_tokens"] <= ODD["max_tokens"]


def test_an_invalid_value_of_each_option_is_refused_with_its_name():
    settings = load_settings()
    for option in OPTIONS:
        with pytest.raises(ValueError, match=option.name.replace("_", " ")):
            sidebar.parse({option.name: option.high + 1}, sidebar.defaults(settings, "cpu"), settings)
