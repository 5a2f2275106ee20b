"""Seed 002's arc-sum experiment (predictive play against fallible opponents): random arc-sum
trees (``trees``) and the vectorized Table 1 (``play``)."""
