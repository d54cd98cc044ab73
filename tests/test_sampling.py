"""Every sampler option declared in engine/sampling.py reaches each place made from it: the settings (and their
environment variable), the sidebar with its words in both languages, what the sidebar's values parse to, vLLM's
`SamplingParams`, the remote server's request body, the OpenAI API's defaults (what a request that leaves an option
out samples with, on the real engine too), the export and a user's own defaults."""

import json

import pytest

from engine import top_p
from engine.openai_app import CHAT_PATH, COMPLETIONS_PATH, api_defaults, build_openai_app, request_models
from engine.remote import RemoteEngine
from engine.sampling import BY_THE_ENGINE, CHAT_SAMPLING, OPTIONS, Sampling, engine_values
from engine.settings import load_settings
from harness.fake_vllm import FakeVllm
from history import exchange
from ui import my_defaults, sidebar
from ui.words import TABLES

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
    for table in TABLES.values():
        assert table[f"setting.{name}"] and table[f"setting.{name}.tip"]
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
    """By its name in the sidebar ("max new tokens"), with its bounds."""
    settings = load_settings()
    for option in OPTIONS:
        with pytest.raises(ValueError, match=f"{TABLES['en'][f'setting.{option.name}'].lower()}: a number from"):
            sidebar.parse({option.name: option.high + 1}, sidebar.defaults(settings, "cpu"), settings)


@pytest.mark.parametrize("name", [n for n in CHAT_SAMPLING if n not in BY_THE_ENGINE])
@pytest.mark.parametrize("path", [CHAT_PATH, COMPLETIONS_PATH])
def test_an_option_reaches_the_apis_defaults(name, path):
    """A request without the option samples with the app's value, as vLLM's serving reads its defaults."""
    body = {"model": "m", "max_tokens": 4, **({"prompt": "Hi"} if path == COMPLETIONS_PATH else
                                              {"messages": [{"role": "user", "content": "Hi"}]})}
    request = request_models()[path].model_validate(body)
    params = request.to_sampling_params(4, api_defaults(Sampling(**{name: ODD[name]})))
    assert getattr(params, name) == pytest.approx(ODD[name])
    named = request_models()[path].model_validate({**body, name: ODD[name] / 2 + 0.5})
    assert getattr(named.to_sampling_params(4, api_defaults(Sampling(**ODD))), name) == pytest.approx(
        ODD[name] / 2 + 0.5), "a request's own value wins"


def test_the_reply_limit_stays_out_of_the_apis_defaults():
    """An API request's reply may take what the context leaves (vLLM's rule); a chat's limit is the chat's."""
    assert not set(BY_THE_ENGINE) & set(api_defaults(Sampling(**ODD)))


@pytest.mark.parametrize("name", CHAT_SAMPLING)
def test_an_option_reaches_the_export_and_comes_back_with_its_import(name):
    sampling = Sampling(**{name: ODD[name]}).model_dump(include={*CHAT_SAMPLING, "seed"})  # as ui/chat_files.py
    args = ([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}], "m", "cpu", sampling,
            "", "Hi")
    assert json.loads(exchange.as_json(*args))["sampling"][name] == ODD[name]
    assert f"{name} {ODD[name]}" in exchange.as_markdown(*args)
    assert exchange.parse(exchange.as_json(*args).encode(), 4096).settings[name] == ODD[name]


async def test_an_api_request_without_sampling_options_runs_with_the_apps_defaults(engine, monkeypatch):
    """On the real engine, through the gate: what vLLM receives for a completion and a chat completion that name
    no temperature, top p or repetition penalty is the app's defaults (a top p handed to the CPU processor)."""
    import httpx

    from api.gate import ApiGate

    received = []
    real = engine.host.llm.generate

    def spy(prompt, params, *args, **kwargs):
        received.append(params)
        return real(prompt, params, *args, **kwargs)

    served = await engine.openai_app()  # the engine's own app: the settings' values are its defaults
    for serving in (served.state.openai_serving_chat, served.state.openai_serving_completion):
        assert api_defaults(engine.settings.sampling()).items() <= serving.default_sampling_params.items()
    app = await build_openai_app(engine.host.llm, engine.settings.model, engine.host.stop_ids, Sampling(**ODD))

    async def openai_app():
        return app

    monkeypatch.setattr(engine, "openai_app", openai_app)
    monkeypatch.setattr(engine.host.llm, "generate", spy)
    bodies = [{"prompt": "Hello"}, {"messages": [{"role": "user", "content": "Hello"}]},
              {"prompt": "Hello", "temperature": 0.9, "top_p": 1.0}]
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=ApiGate(engine)), base_url="http://test",
                                 timeout=httpx.Timeout(300)) as http:
        for body in bodies:
            path = COMPLETIONS_PATH if "prompt" in body else CHAT_PATH
            response = await http.post(path, json={"model": engine.settings.model, "max_tokens": 4, **body})
            assert response.status_code == 200, response.text

    handed = top_p.serves(engine.host.llm)
    odd_top_p = (1.0, ODD["top_p"]) if handed else (ODD["top_p"], None)
    assert [(p.temperature, p.top_p, (p.extra_args or {}).get(top_p.KEY), p.repetition_penalty)
            for p in received] == [(ODD["temperature"], *odd_top_p, ODD["repetition_penalty"])] * 2 + [
        (0.9, 1.0, None, ODD["repetition_penalty"])]
