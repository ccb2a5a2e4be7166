"""The sectioned system prompt (DESIGN section 4): static sections from prompt folders and the
task, dynamic sections about the environment, and the catalogue of the tools on offer.

`build_sections` puts them together in order; `render_sections` makes the text the model gets.
"""

from runner.prompt.budget import BUDGET_TITLE, Budgeting
from runner.prompt.builder import build_sections
from runner.prompt.dynamic import HostFacts, host_facts
from runner.prompt.sections import Section, default_prompts_dir, load_sections, render_sections

__all__ = [
    "BUDGET_TITLE",
    "Budgeting",
    "HostFacts",
    "Section",
    "build_sections",
    "default_prompts_dir",
    "host_facts",
    "load_sections",
    "render_sections",
]
