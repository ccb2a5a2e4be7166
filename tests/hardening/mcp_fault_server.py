"""The SDK test server (tests/fakes/mcp_test_server.py) plus tools that misbehave at scale.

    python tests/hardening/mcp_fault_server.py [--flood-at-start MB] [--tag TEXT]

`big(megabytes)` answers with that many megabytes of text; `flood(megabytes)` writes that many
megabytes to stderr before it answers. `--flood-at-start` writes to stderr before serving; `--tag`
only marks the command line, so a test can find its processes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Annotated

from pydantic import Field

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.fakes.mcp_test_server import build_server

MB = 1024 * 1024
LINE = "x" * 1023 + "\n"


def flood_stderr(megabytes: float) -> None:
    """Write `megabytes` of text to stderr, in 1 KiB lines."""
    lines = int(megabytes * MB) // len(LINE)
    chunk = LINE * 1024
    for _ in range(lines // 1024):
        sys.stderr.write(chunk)
    sys.stderr.write(LINE * (lines % 1024))
    sys.stderr.flush()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--flood-at-start", type=float, default=0.0)
    parser.add_argument("--tag", default="")
    opts = parser.parse_args()
    app = build_server("fault")

    @app.tool()
    def big(megabytes: Annotated[float, Field(description="Size of the answer in MB.")]) -> str:
        """Answer with `megabytes` MB of text: a head marker, filler lines, a tail marker."""
        size = int(megabytes * MB)
        filler = (LINE * (size // len(LINE) + 1))[: max(size - 20, 0)]
        return f"HEAD-OF-BIG-RESULT\n{filler}\nTAIL-OF-BIG"

    @app.tool()
    def flood(megabytes: Annotated[float, Field(description="MB to write to stderr.")]) -> str:
        """Write `megabytes` MB to stderr, then answer."""
        flood_stderr(megabytes)
        return f"flooded {megabytes} MB"

    flood_stderr(opts.flood_at_start)
    app.run()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
