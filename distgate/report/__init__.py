"""Presentation: rich tables, charts and plots, one module per command. The library
functions return plain result objects; only this package turns them into text or images."""
