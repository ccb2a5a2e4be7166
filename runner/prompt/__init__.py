"""The sectioned system prompt: static sections, dynamic sections, and the tool catalogue."""

from runner.prompt.builder import build_sections
from runner.prompt.dynamic import HostFacts, host_facts
from runner.prompt.sections import Section, render_sections

__all__ = [
    "HostFacts",
    "Section",
    "build_sections",
    "host_facts",
    "render_sections",
]
