"""Chainlit 2.12 beside mcp 2 (requirements/overrides.txt): the override is still needed, the one Chainlit feature
that mcp 2 breaks (its MCP connect route) is off, and the rest of Chainlit that the app uses loads. The app's
Chainlit features themselves run on this very install in the server and browser tests (test_app.py,
test_browser.py)."""

import importlib
import importlib.metadata
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent


def test_chainlit_still_asks_for_an_mcp_older_than_the_one_installed():
    """When a Chainlit release allows mcp 2, this fails: take it, and drop the override."""
    installed = Version(importlib.metadata.version("mcp"))
    asked = [Requirement(r) for r in importlib.metadata.requires("chainlit") if Requirement(r).name == "mcp"]
    assert installed.major >= 2, "vLLM 0.30+ needs mcp 2"
    assert asked and not all(r.specifier.contains(installed) for r in asked), (
        f"chainlit {importlib.metadata.version('chainlit')} now allows mcp {installed}: remove the mcp line "
        "from requirements/overrides.txt and compile the locks again")
    overrides = (ROOT / "requirements" / "overrides.txt").read_text()
    assert "mcp>=2" in overrides and "connect route" in overrides  # the pin says why


def test_chainlits_mcp_feature_is_off_in_the_apps_config():
    from chainlit.config import McpFeature

    config = tomllib.loads((ROOT / ".chainlit" / "config.toml").read_text())
    mcp = McpFeature(**config["features"]["mcp"])
    assert not mcp.enabled and not mcp.user_servers.enabled and not mcp.servers


def test_what_the_app_uses_of_chainlit_loads_with_mcp_2_and_only_the_mcp_route_lacks_its_client():
    for module in ("chainlit", "chainlit.server", "chainlit.callbacks", "chainlit.session", "chainlit.data.sql_alchemy",
                   "chainlit.auth"):
        importlib.import_module(module)
    from chainlit.server import app, connect_mcp

    assert any(getattr(route, "path", "") == "/mcp" for route in app.routes)
    streamable = importlib.import_module("mcp.client.streamable_http")
    # The route imports this name first thing (chainlit/server.py, connect_mcp); mcp 2 renamed it.
    assert "streamablehttp_client" in Path(connect_mcp.__code__.co_filename).read_text()
    assert not hasattr(streamable, "streamablehttp_client"), (
        "mcp has the name Chainlit's MCP route imports again: that route may work with mcp 2 now")
