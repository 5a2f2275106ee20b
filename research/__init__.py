"""Research experiments: one-off studies that produced a finding (a ladder of strength, balance
against outside engines, why networks died, root values near a draw), each with the results files
and figures it wrote, beside it. research/README.md lists them with their findings and the
documents that report them. Run one from the repository root as a module: ``python -m
research.ladder`` (``bench.harness``)."""
