"""Forward-mode AD (placeholder, see README: not implemented yet)."""
