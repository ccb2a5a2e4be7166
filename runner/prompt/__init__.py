"""The sectioned system prompt (DESIGN section 4): static sections from prompt folders and the
task, dynamic sections about the environment, the skills on offer (`skills`: SKILL.md folders,
loaded on demand by the `load_skill` tool), and the catalogue of the tools on offer. The room
`rubric` is the other prompt the runner writes: a rubric grader's request and its verdict.

`build_sections` puts them together in order; `render_sections` makes the text the model gets.
"""

from runner.prompt.budget import BUDGET_TITLE, Budgeting
from runner.prompt.builder import APPENDED_SECTION, build_sections
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

__all__ = [
    "APPENDED_SECTION",
    "BUDGET_TITLE",
    "REQUEST_OPENING",
    "Budgeting",
    "CriterionTally",
    "CriterionVote",
    "LOAD_SKILL",
    "HostFacts",
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
]
