"""The sectioned system prompt (DESIGN section 4): static sections from prompt folders and the
task, dynamic sections about the environment, the skills on offer (`skills`: SKILL.md folders,
loaded on demand by the `load_skill` tool), the catalogue of the tools on offer, what each
request carries (`accounting`), and the deferred catalogue behind `find_tools` (`deferred`). The
room `rubric` is the other prompt the runner writes: a rubric grader's request and its verdict.

`build_sections` puts them together in order; `render_sections` makes the text the model gets.
"""

from runner.prompt.accounting import RequestMeter, RequestTokens, tokens_of, tool_json
from runner.prompt.budget import BUDGET_TITLE, Budgeting
from runner.prompt.builder import APPENDED_SECTION, build_sections
from runner.prompt.catalogue import found_text, loaded_announcement
from runner.prompt.deferred import FIND_TOOLS, ToolSearch, ToolShelf, defer, find_tools_spec
from runner.prompt.dynamic import HostFacts, host_facts
from runner.prompt.rubric import (
    REQUEST_OPENING,
    CriterionTally,
    CriterionVote,
    VerdictError,
    grader_request,
    parse_verdict,
    rubric_passes,
    tally,
    verdict_retry,
)
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
    "APPENDED_SECTION",
    "FIND_TOOLS",
    "ToolSearch",
    "ToolShelf",
    "defer",
    "find_tools_spec",
    "found_text",
    "loaded_announcement",
    "BUDGET_TITLE",
    "REQUEST_OPENING",
    "Budgeting",
    "CriterionTally",
    "CriterionVote",
    "LOAD_SKILL",
    "HostFacts",
    "RequestMeter",
    "RequestTokens",
    "Section",
    "Skill",
    "VerdictError",
    "build_sections",
    "default_prompts_dir",
    "discover_skills",
    "grader_request",
    "host_facts",
    "load_sections",
    "load_skill_spec",
    "parse_verdict",
    "render_sections",
    "rubric_passes",
    "skills_section",
    "tally",
    "verdict_retry",
    "prompt_stats",
    "stats_text",
    "tokens_of",
    "tool_json",
]
