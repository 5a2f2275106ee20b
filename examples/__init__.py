"""Code of single experiments built on descent's packages (not part of the library): run from the
repository root, e.g. ``python -m examples.arc_sum.play``."""
