"""agent-runner: run LLM agents non-interactively in CI and batch jobs."""

__all__ = ["__version__"]

__version__ = "0.1.0"
