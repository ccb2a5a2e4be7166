"""The sectioned system prompt (DESIGN section 4): static sections from prompt folders and the
task, dynamic sections about the environment, the skills on offer (`skills`: SKILL.md folders,
loaded on demand by the `load_skill` tool), the catalogue of the tools on offer, what each
request carries (`accounting`), and the deferred catalogue behind `find_tools` (`deferred`).

`build_sections` puts them together in order; `render_sections` makes the text the model gets.
"""

from runner.prompt.accounting import RequestMeter, RequestTokens, tokens_of, tool_json
from runner.prompt.budget import BUDGET_TITLE, Budgeting
from runner.prompt.builder import build_sections
from runner.prompt.catalogue import found_text, loaded_announcement
from runner.prompt.deferred import FIND_TOOLS, ToolSearch, ToolShelf, defer, find_tools_spec
from runner.prompt.dynamic import HostFacts, host_facts
from runner.prompt.sections import Section, default_prompts_dir, load_sections, render_sections
from runner.prompt.skills import (
    LOAD_SKILL,
    Skill,
    discover_skills,
    load_skill_spec,
    skills_section,
)
from runner.prompt.stats import prompt_stats, stats_text

__all__ = [
    "FIND_TOOLS",
    "ToolSearch",
    "ToolShelf",
    "defer",
    "find_tools_spec",
    "found_text",
    "loaded_announcement",
    "BUDGET_TITLE",
    "Budgeting",
    "LOAD_SKILL",
    "HostFacts",
    "RequestMeter",
    "RequestTokens",
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
    "prompt_stats",
    "stats_text",
    "tokens_of",
    "tool_json",
]
