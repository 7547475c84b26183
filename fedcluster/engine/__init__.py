"""Local training and evaluation over stacked per-client parameters."""
