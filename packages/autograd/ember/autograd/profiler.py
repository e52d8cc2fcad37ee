"""Profiler placeholder."""
