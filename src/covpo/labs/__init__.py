"""Policies beyond softmax-linear: a token-level sequence laboratory and two-layer networks."""
