"""The sectioned system prompt (DESIGN section 4): static sections from prompt folders and the
task, dynamic sections about the environment, the skills on offer (`skills`: SKILL.md folders,
loaded on demand by the `load_skill` tool), and the catalogue of the tools on offer.

`build_sections` puts them together in order; `render_sections` makes the text the model gets.
"""

from runner.prompt.budget import BUDGET_TITLE, Budgeting
from runner.prompt.builder import APPENDED_SECTION, build_sections
from runner.prompt.dynamic import HostFacts, host_facts
from runner.prompt.sections import Section, default_prompts_dir, load_sections, render_sections
from runner.prompt.skills import (
    LOAD_SKILL,
    Skill,
    discover_skills,
    load_skill_spec,
    skills_section,
)

__all__ = [
    "APPENDED_SECTION",
    "BUDGET_TITLE",
    "Budgeting",
    "LOAD_SKILL",
    "HostFacts",
    "Section",
    "Skill",
    "build_sections",
    "default_prompts_dir",
    "discover_skills",
    "host_facts",
    "load_sections",
    "load_skill_spec",
    "render_sections",
    "skills_section",
]
