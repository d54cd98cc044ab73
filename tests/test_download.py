"""Getting the model before the engine starts (engine/download.py), against a hub mirror on 127.0.0.1.

The mirror (harness/hub_mirror.py) serves the tiny model slowly under a hub id, and `HF_ENDPOINT` points at it,
as a user's would point at https://hf-mirror.com; the download is the real `huggingface_hub` client's. A cut
mirror stays silent until it is restored, so the first try fails as a lost network does.
"""

import asyncio
import importlib
import json
import re

import httpx
import pytest

from harness.chat_client import ChatClient
from harness.presets import APP_PRESET, TEST_PRESET
from harness.hub_mirror import HubMirror
from harness.server import ChainlitServer

REPO = "mirror-org/tiny-ernie"
PERCENT = re.compile(r"Downloading mirror-org/tiny-ernie: [\d,.]+ of [\d,.]+ kB \((\d+)%\)")
# cut a little past half of the tiny model's 0.8 MB: three of the client's 128 KiB pieces are on disk by then
CUT_AFTER = 450_000


def percents(texts: list[str]) -> list[int]:
    return [int(found.group(1)) for text in texts if (found := PERCENT.search(text))]


@pytest.fixture
def online(monkeypatch):
    """The tests run with HF_HUB_OFFLINE=1 (conftest): this one may reach its mirror."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)


async def test_a_cut_download_continues_where_it_stopped_and_the_engine_then_answers(tiny_model, tmp_path,
                                                                                     monkeypatch, online):
    from engine.engine import ChatEngine
    from engine.errors import DownloadError
    from engine.settings import Sampling, load_settings

    with HubMirror(REPO, tiny_model, bytes_per_s=150_000) as mirror:
        monkeypatch.setenv("HF_ENDPOINT", mirror.url)
        total = sum(len(data) for data in mirror.files.values())
        engine = ChatEngine(load_settings(model=REPO, preset="custom", custom_preset=TEST_PRESET,
                                          download_dir=tmp_path / "cache"))
        stages = []
        mirror.cut_after(CUT_AFTER)
        with pytest.raises(DownloadError) as failed:
            await engine.ensure_started(lambda progress: stages.append(progress.stage))
        for words in ("stopped at", f"the hub mirror {mirror.url}", "Try again", "continues where it stopped",
                      "HF_ENDPOINT=https://hf-mirror.com", "CHAT_MODEL_SOURCE=modelscope", "CHAT_MODEL=/path"):
            assert words in str(failed.value)
        first_try = percents(stages)
        assert first_try and 0 < max(first_try) < 100, stages
        assert re.search(r"\d kB/s, \d+ (s|min) left", " ".join(stages)), "speed and time left are shown"
        sent_before = mirror.sent
        mirror.restore()
        stages.clear()
        try:
            await engine.ensure_started(lambda progress: stages.append(progress.stage), retry=True)
            fetched_again = mirror.sent - sent_before
            assert fetched_again <= total - 3 * 128 * 1024, "the second try asks only for what is missing"
            second_try = percents(stages)
            assert second_try[0] >= 40 and second_try == sorted(second_try) and second_try[-1] == 100, stages
            assert stages.index(next(s for s in stages if "(100%)" in s)) < stages.index("Ready")
            reply = [item async for item in engine.stream([{"role": "user", "content": "hello"}],
                                                          Sampling(max_tokens=8)) if isinstance(item, str)]
            assert "".join(reply), "the engine built from the downloaded folder answers"
            assert engine.client.model_config.served_model_name == REPO, "users and the API see the model's id"
        finally:
            engine.shutdown()


async def click(chat: ChatClient, action: dict, timeout: float = 300) -> None:
    """Press an action button as the browser does: Chainlit runs its callback for this chat's session."""
    token = await chat.sign_in()
    async with httpx.AsyncClient(base_url=chat.url, timeout=timeout,
                                 cookies={"access_token": token} if token else None) as http:
        response = await http.post("/project/action", json={"sessionId": chat.session_id, "action": action})
        assert response.status_code == 200, response.text


async def test_the_chat_shows_the_download_and_try_again_resumes_it(tiny_model, tmp_path):
    with HubMirror(REPO, tiny_model, bytes_per_s=150_000) as mirror:
        mirror.cut_after(CUT_AFTER)
        env = {"CHAT_MODEL": REPO, "HF_ENDPOINT": mirror.url, "HF_HUB_OFFLINE": "0",
               "CHAT_DOWNLOAD_DIR": str(tmp_path / "cache"), "CHAT_PRESET": "custom",
               "CHAT_CUSTOM_PRESET": json.dumps(APP_PRESET)}
        server = ChainlitServer(env, tmp_path / "chainlit.log").start()
        try:
            chat = await ChatClient(server.url).connect()
            asked = await chat.send("hello?")  # waits for the start that opening the chat began
            other = await ChatClient(server.url).connect()  # another tab, waiting for the same start
            await chat.wait_idle(180)
            for each in (chat, other):
                first_try = percents(each.ever_shown)
                assert first_try and 0 < max(first_try) < 100, "each chat's note shows the bytes and percent"
            failed = next(m for m in chat.messages.values() if "❌" in m.content)
            assert "Try again" in failed.content and "continues where it stopped" in failed.content
            retry = next(a for a in chat.actions if a["forId"] == failed.id)
            mirror.restore()
            shown_before = len(chat.ever_shown)
            await click(chat, retry)
            second_try = percents(chat.ever_shown[shown_before:])
            assert second_try and second_try[0] >= 40 and second_try[-1] == 100, chat.ever_shown[shown_before:]
            for _ in range(600):  # "Try again" answers the message that waited for the engine
                if any(m.content for m in chat.replies("ERNIE Chat")):
                    break
                await asyncio.sleep(0.5)
            assert any(m.content for m in chat.replies("ERNIE Chat")), f"no reply to {asked}"
            assert "from the hub mirror" in (tmp_path / "chainlit.log").read_text(), "the log shows the download"
            await chat.close()
            await other.close()
        finally:
            assert server.stop() == 0


async def test_modelscope_gets_ernie_under_its_modelscope_id_with_progress(tiny_model, monkeypatch):
    """The wiring only: ModelScope itself cannot be reached from here, so its client's download is stood in for."""
    from engine import download
    from engine.settings import load_settings

    modelscope = importlib.import_module("modelscope.hub.snapshot_download")  # the package's name is the function

    asked = {}

    def fake_snapshot_download(model_id, cache_dir=None, allow_patterns=None, progress_callbacks=()):
        asked.update(model_id=model_id, allow_patterns=allow_patterns)
        for path in sorted(tiny_model.iterdir()):
            for callback in progress_callbacks:
                bar = callback(path.name, path.stat().st_size)
                bar.update(path.stat().st_size)
                bar.end()
        return str(tiny_model)

    monkeypatch.setattr(modelscope, "snapshot_download", fake_snapshot_download)
    settings = load_settings(model_source="modelscope")
    reports = []

    async def report(text: str) -> None:
        reports.append(text)

    assert await download.fetch(settings, report) == tiny_model
    assert asked == {"model_id": "PaddlePaddle/ERNIE-4.5-0.3B-PT", "allow_patterns": download.WANTED}
    assert reports[-1].startswith("Downloading baidu/ERNIE-4.5-0.3B-PT:") and reports[-1].endswith("(100%)")
    assert download.source_name(settings) == "ModelScope (PaddlePaddle/ERNIE-4.5-0.3B-PT)"


def test_an_unknown_model_source_is_refused_with_the_choices():
    from engine.errors import SettingsError
    from engine.settings import load_settings

    with pytest.raises(SettingsError) as refused:
        load_settings(model_source="hf-mirror")
    assert "CHAT_MODEL_SOURCE" in str(refused.value) and "'huggingface' or 'modelscope'" in str(refused.value)
