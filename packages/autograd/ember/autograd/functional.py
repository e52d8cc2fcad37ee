"""functional placeholder."""
