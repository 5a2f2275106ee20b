"""Benchmarks: timing, scaling and memory measurements of the package, each with its results file
(``results_<name>.json``) and its section of BENCHMARKS.md. Run one from the repository root as a
module: ``python -m bench.bench_games`` (``bench.harness``). Research experiments, which produce
findings rather than measurements, are in ``research/``; tools in ``tools/``."""
