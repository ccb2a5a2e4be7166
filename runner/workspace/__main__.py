"""`python -m runner.workspace --root DIR`: the workspace MCP server over stdio."""

from runner.workspace.server import main

raise SystemExit(main())
