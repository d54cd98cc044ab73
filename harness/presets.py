"""The engine presets the tests run the tiny model with: one for the engine the tests drive directly, one for the
app servers they start (long replies, so that a test acting in the middle of one still finds it running).

They run on the CPU; `CHAT_TEST_DEVICE=cuda` runs the same tests on a GPU (the engine's GPU paths: vLLM's spawned
core, sleep mode, the GPU's memory), where the CPU-only tests skip themselves.
"""

import os

DEVICE = os.environ.get("CHAT_TEST_DEVICE", "cpu")

# Small enough that trimming is cheap to trigger, big enough for 8 streams at once.
TEST_PRESET = {"name": "custom", "purpose": "tests", "device": DEVICE,
               "kv_cache_gib": 0.25, "max_model_len": 2048, "max_num_seqs": 8,
               "max_num_batched_tokens": 2048, "cuda_graphs": False}
# The app server's: replies of up to 8,192 tokens (~30 s on the CPU), so that a test that acts in the middle of a
# reply (Stop, killing the engine) still finds it running when the test client was not scheduled for seconds,
# as happens on a machine busy with other work.
APP_PRESET = {**TEST_PRESET, "max_model_len": 10240}
