"""Embedders and LLM clients behind small protocols."""
