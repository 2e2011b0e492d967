"""Policies beyond softmax-linear: a token-level sequence laboratory, two-layer networks and a
small transformer (the last needs JAX and optax, the ``transformer`` extra)."""
