"""Evaluations on real data (LoCoMo, GateMem)."""
