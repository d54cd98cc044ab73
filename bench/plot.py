"""The benchmark's plots: tokens/s against concurrent chats, and peak memory per configuration. matplotlib is
imported when a plot is drawn: the GPU lock (what the GPU machine runs) has none, and the benchmarks' JSON and
tables must not need it."""

from pathlib import Path

from bench.table import by_config
from engine.presets import BUILT_IN
from engine.sizing import GIB, footprint


def plot(report: dict, stem: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    grouped = by_config(report)
    paths = []
    fig, ax = plt.subplots(figsize=(8, 5))
    for name, metrics in grouped.items():
        points = [(users, metrics.get(f"tok_s_at_{users}")) for users in (1, 8, 32)]
        points = [(u, v) for u, v in points if isinstance(v, (int, float))]
        if points:
            ax.plot(*zip(*points), marker="o", label=name)
    ax.set(xlabel="concurrent chats", ylabel="generated tokens/s (all chats)", xscale="log", yscale="log",
           title=f"Throughput · {report['device']}")
    ax.set_xticks([1, 8, 32], labels=["1", "8", "32"])
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    paths.append(Path(f"{stem}-throughput.png"))
    fig.savefig(paths[-1], dpi=110, bbox_inches="tight")
    plt.close(fig)

    names = [n for n, m in grouped.items() if isinstance(m.get("peak_memory_gib"), (int, float))]
    fig, ax = plt.subplots(figsize=(8, 5))
    ax.barh(names, [grouped[n]["peak_memory_gib"] for n in names], color="#4c72b0")
    for n in names:
        preset = BUILT_IN.get(n.split(":")[-1].split(" ")[0])
        if preset and n.startswith("ours"):
            size = footprint(preset).total / GIB
            ax.plot([size] * 2, [names.index(n) - 0.4, names.index(n) + 0.4], color="red")
    ax.set(xlabel="peak device memory, GiB (red: the preset's footprint, engine.sizing)", xscale="log",
           title=f"Memory · {report['device']}")
    ax.grid(alpha=0.3, axis="x")
    paths.append(Path(f"{stem}-memory.png"))
    fig.savefig(paths[-1], dpi=110, bbox_inches="tight")
    plt.close(fig)
    return paths
