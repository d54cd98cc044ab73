"""The words of the settings sidebar: its labels and descriptions, the memory presets, and why a change was refused, in
English."""

TEXTS = {
    "setting.preset": "Memory preset",
    "setting.preset.tip": ("Restarts the engine that every chat shares: replies pause for about 10 s on a GPU and "
                           "30-60 s on the processor. A preset that cannot run here is refused first."),
    "setting.temperature": "Temperature",
    "setting.temperature.tip": "0 always picks the likeliest word; higher is more varied.",
    "setting.top_p": "Top p",
    "setting.top_p.tip": ("Samples only from the likeliest words that together hold this much probability; 1 keeps "
                          "them all."),
    "setting.max_tokens": "Max new tokens",
    "setting.max_tokens.tip": "At most the context of the running preset.",
    "setting.repetition_penalty": "Repetition penalty",
    "setting.repetition_penalty.tip": ("Above 1, words already in the chat are less likely to come again: a small "
                                       "model that repeats itself loops less at 1.1-1.3. 1 leaves them as they are."),
    "setting.system_prompt": "System prompt",
    "setting.system_prompt.default": "You are a helpful assistant.",  # engine/settings.py's default, as it is
    "setting.show_stats": "Show what each reply cost",
    "setting.library": "Answer from my library",
    "setting.library.tip": ("Each question is answered from the best passages of your documents (the Library command "
                            "adds them), with their sources. @name in a message picks documents for it."),
    "settings.reset_app": ("↺ The settings are back to the app's defaults (sampling and system prompt); the running "
                           "preset stays."),
    "settings.reset_yours": ("↺ The settings are back to your own defaults for new chats (sampling and system "
                             "prompt); the running preset stays."),
    "setting.my_defaults": "Use these for new chats",
    "setting.my_defaults.tip": ("Your new chats start with this chat's sampling (temperature, top p, max new tokens, "
                                "repetition penalty) and system prompt, kept with your account. Off: new chats start "
                                "with the app's defaults."),

    # the presets as the sidebar lists them (a custom preset's purpose is the user's own, shown as written)
    "preset_label": "{name}: {purpose}",
    "preset.auto": "the largest that fits this device",
    "preset.2gb": "The tightest cards (2.2 GiB free): 2k context, 16 chats at once",
    "preset.4gb": "4 GB cards (3 GiB free): 4k context, 32 chats at once",
    "preset.6gb": "6 GB cards (5 GiB free): 8k context, 32 chats at once",
    "preset.8gb": "8 GB cards (7 GiB free): 16k context, 64 chats at once",
    "preset.cpu": "No GPU: runs on the processor, 4k context",
    "preset.2gb-8bit": "2 GB cards (1.8 GiB free): 2k context, 16 chats at once, 8-bit weights, 8-bit KV",
    "preset.cpu-8bit": "No GPU, faster: the processor with 8-bit weights (int8), 4k context",

    # what the preset list says about this device
    "preset.auto_now": "auto (now: {name})",
    "preset.too_big": "{name} (too big)",
    "preset.no_gpu": ("GPU presets need an NVIDIA GPU: this machine has none, so only the processor's presets are "
                      "offered."),
    "preset.cpu_only": ("This server runs on the processor only (CHAT_DEVICE=cpu), so only the processor's presets "
                        "are offered."),
    "preset.too_big.note": "Presets marked too big need more memory than {gpu} has free ({free:.1f} GiB).",

    # a change the sidebar refuses
    "settings.not_applied": "Settings not applied: {why} The sidebar shows the settings in use again.",
    "settings.oversized": ("the change was {mb:.1f} MB, more than the 1 MB one change can carry; the system prompt "
                           "takes at most {most:,} characters."),
    "settings.system_prompt": "The system prompt must be text of at most {most:,} characters{size}.",
    "settings.system_prompt.size": " (it has {size:,})",
    "settings.sampling": "{name}: a number from {low:g} to {high:g}, got {value}.",
    "settings.switches": "'show stats' and 'library' must be on or off, and the preset one of: {valid}.",
}
