"""A rubric's grader (DESIGN 27), as pure text: the request that quotes the agent's work as data
it cannot escape from (`request`), and the verdict parsed strictly and counted by votes
(`verdict`). The calls themselves are made by the session (runner.run.session.rubric).
"""

from runner.prompt.rubric.request import (
    REQUEST_OPENING,
    GraderRequest,
    escape_data,
    grader_request,
    quote,
    verdict_retry,
)
from runner.prompt.rubric.verdict import (
    NO_VERDICT,
    CriterionTally,
    CriterionVote,
    VerdictError,
    parse_verdict,
    rubric_passes,
    tally,
)

__all__ = [
    "NO_VERDICT",
    "REQUEST_OPENING",
    "CriterionTally",
    "CriterionVote",
    "GraderRequest",
    "VerdictError",
    "escape_data",
    "grader_request",
    "parse_verdict",
    "quote",
    "rubric_passes",
    "tally",
    "verdict_retry",
]
