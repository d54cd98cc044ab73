"""The benchmark's printed table: one row per configuration, the metrics that matter side by side."""

COLUMNS = [
    ("import_s", "import s", "{:.1f}"),
    ("start_s", "start s", "{:.1f}"),
    ("start_to_first_token_s", "start→1st tok s", "{:.1f}"),
    ("first_message_ttft_ms", "1st msg TTFT ms", "{:.0f}"),
    ("warm_ttft_ms", "warm TTFT ms", "{:.0f}"),
    ("ttft_short_p95_ms", "TTFT short p95", "{:.0f}"),
    ("ttft_long_p95_ms", "TTFT 1.5k p95", "{:.0f}"),
    ("decode_tok_s", "1-stream tok/s", "{:.0f}"),
    ("engine_layer_overhead_pct", "layer overhead %", "{:.1f}"),
    ("tok_s_at_1", "1 chat tok/s", "{:.0f}"),
    ("tok_s_at_8", "8 chats tok/s", "{:.0f}"),
    ("tok_s_at_32", "32 chats tok/s", "{:.0f}"),
    ("tok_s_at_64", "64 chats tok/s", "{:.0f}"),
    ("ttft_at_32_p95_ms", "TTFT p95 at 32 ms", "{:.0f}"),
    ("tok_s_16_long_chats", "16 long chats tok/s", "{:.0f}"),
    ("prefix_second_ttft_ms", "prefix hit TTFT", "{:.0f}"),
    ("peak_memory_gib", "peak GiB", "{:.2f}"),
    ("left_after_shutdown_mib", "left MiB", "{:.0f}"),
    ("switch_s", "switch s", "{:.1f}"),
]


def by_config(report: dict) -> dict[str, dict[str, object]]:
    grouped: dict[str, dict[str, object]] = {}
    for row in report["results"]:
        grouped.setdefault(row["config"], {})[row["metric"]] = row["value"]
    return grouped


def table(report: dict, columns: list[tuple[str, str, str]] = COLUMNS) -> str:
    grouped = by_config(report)
    header = "| config | " + " | ".join(label for _, label, _ in columns) + " |"
    lines = [f"{report['device']} · {report['model']} · {report['versions']}", "", header,
             "|---" * (len(columns) + 1) + "|"]
    for name, metrics in grouped.items():
        cells = []
        for key, _, fmt in columns:
            value = metrics.get(key)
            cells.append(fmt.format(value) if isinstance(value, (int, float)) else "–")
        if "error" in metrics:
            cells[-1] += f" (error: {metrics['error']})"
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
