"""Repository tools: ``python -m tools.export_run`` copies a training run's networks into
``results/training-runs/``; ``python -m tools.results_manifest`` writes ``results/MANIFEST.json``."""
