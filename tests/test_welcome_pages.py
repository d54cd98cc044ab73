"""The pages a newcomer reads first say what the app does today: chainlit.md and chainlit_zh-CN.md (the welcome page
in each language) name every chip, preset and limit the app has, and the README stays short enough to read."""

import re
import tomllib
from pathlib import Path

import pytest

from engine import presets
from ui.chips import shown

ROOT = Path(__file__).resolve().parent.parent
PAGES = {"en": ROOT / "chainlit.md", "zh": ROOT / "chainlit_zh-CN.md"}
# What each page must name, beside the chips and presets: the way to a document, the status, the API, the tools
# under a reply, and the download's way around a blocked hub.
NAMED = {"en": ["`@name`", "`/status`", "`/v1`", "Regenerate", "Continue", "Stop", "Export", "Import",
                "HF_ENDPOINT", "modelscope", "Markdown or OpenAI JSON", "PDF"],
         "zh": ["`@文档名`", "`/status`", "`/v1`", "重新生成", "继续", "停止", "导出", "导入",
                "HF_ENDPOINT", "modelscope", "OpenAI JSON", "PDF"]}
STALE = ["4, 6 or 8 GB", "4、6 或 8 GB", "first message", "第一条消息"]


@pytest.mark.parametrize("language", PAGES)
def test_the_welcome_page_names_every_chip_preset_and_limit(language):
    page = PAGES[language].read_text()
    upload = tomllib.loads((ROOT / ".chainlit" / "config.toml").read_text())["features"]["spontaneous_file_upload"]
    chips = [command["id"] for command in shown()]
    missing = [chip for chip in chips if chip not in page]
    missing += [name for name in ["auto", *presets.BUILT_IN] if f"`{name}`" not in page]
    missing += [word for word in NAMED[language] if word not in page]
    files = f"{upload['max_files']} files" if language == "en" else f"{upload['max_files']} 个文件"
    missing += [limit for limit in (files, f"{upload['max_size_mb']} MB") if limit not in page]
    assert not missing, f"{PAGES[language].name} does not name: {missing}"
    assert not [claim for claim in STALE if claim in page], "a claim the app no longer makes"


def test_the_readme_is_short_and_its_links_lead_somewhere():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.encode()) < 15 * 1024, f"the README is {len(readme.encode())} bytes: move details to docs/"
    targets = re.findall(r"\]\(((?!https?:)[^)#]+)(?:#[^)]*)?\)", readme)
    assert targets and not [t for t in targets if not (ROOT / t).exists()], "every link names a file that exists"
