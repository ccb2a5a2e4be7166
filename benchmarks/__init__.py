"""Benchmarks of the runner against the bare SDK and MCP floor (DESIGN section 11)."""
