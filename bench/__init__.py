"""The benchmark: our presets against the baselines, each configuration in its own process."""
