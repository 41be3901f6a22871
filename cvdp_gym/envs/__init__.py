"""Gymnasium environments over CVDP problems."""
