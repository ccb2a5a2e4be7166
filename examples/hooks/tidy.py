"""post_tool hook: a tiny formatter for the file the agent just wrote or edited.

It strips trailing whitespace and makes the file end with one newline. What it prints is
appended to the tool result the agent sees, so the agent knows the file changed under it.
"""

import json
import sys
from pathlib import Path

event = json.load(sys.stdin)
path = Path(event["arguments"].get("path", ""))
if event.get("is_error") or not path.is_file():
    sys.exit(0)
text = path.read_text(encoding="utf-8")
tidy = "\n".join(line.rstrip() for line in text.splitlines()).rstrip("\n") + "\n"
if tidy != text:
    path.write_text(tidy, encoding="utf-8")
    print(f"tidy: cleaned whitespace in {path}")
