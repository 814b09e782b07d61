"""Reads shared between identical web requests for a moment: the keyed store and the keyed reads."""
