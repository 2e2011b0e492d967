"""Figures and widgets, one module per chapter. The package core never imports these."""
