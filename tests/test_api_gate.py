"""The API's gate on its own (no web server): what a client gets when the engine cannot serve it."""

import httpx

from engine.api_gate import ApiGate
from engine.engine import ChatEngine
from engine.settings import load_settings
from conftest import TEST_PRESET


async def test_an_engine_that_cannot_start_gives_api_clients_a_503_with_the_reason(tmp_path):
    engine = ChatEngine(load_settings(model=str(tmp_path / "no-model"), preset="custom", custom_preset=TEST_PRESET))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=ApiGate(engine)), base_url="http://test") as http:
        first, again = [await http.post("/v1/chat/completions", json={"model": "m", "messages": []}) for _ in range(2)]
    for response in (first, again):  # the failure is remembered: the second request does not start it again
        assert response.status_code == 503
        error = response.json()["error"]
        assert "could not be found" in error["message"] and "CHAT_MODEL" in error["message"]
    assert engine.client is None and engine.api_running == 0
