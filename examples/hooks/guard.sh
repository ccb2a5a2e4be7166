#!/bin/sh
# pre_tool hook for execute_command. The event arrives as JSON on stdin:
#   {"event": "pre_tool", "tool": "execute_command", "arguments": {"command": "..."}, ...}
# Exit 2 blocks the call, and what this prints on stderr is the error the agent reads.
# Exit 0 lets the call go on. Any other exit is logged as a warning and the call goes on.
event=$(cat)
case "$event" in
  *"| sh"* | *"|sh"* | *"| bash"* | *"|bash"*)
    echo "Piping into a shell is not allowed here; download the file and read it first." >&2
    exit 2
    ;;
  *'"sudo '*)
    echo "sudo is not available in CI; work inside the project folder instead." >&2
    exit 2
    ;;
esac
exit 0
