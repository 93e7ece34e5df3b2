"""A Claude Code ``Elicitation`` hook that accepts: it fills the requested form and says yes.

Claude Code runs it with the hook input (JSON) on stdin, ``requested_schema`` among it, and reads
``hookSpecificOutput`` from stdout. Booleans are answered true, enums with their first value,
strings "yes", numbers 1: enough for a confirmation such as ``delete_file``'s.
"""

import json
import sys


def answer(schema: dict) -> dict:
    content = {}
    for name, field in (schema.get("properties") or {}).items():
        kind = field.get("type")
        if field.get("enum"):
            content[name] = field["enum"][0]
        elif kind == "boolean":
            content[name] = True
        elif kind in ("number", "integer"):
            content[name] = 1
        else:
            content[name] = "yes"
    return content


hook_input = json.load(sys.stdin)
print(json.dumps({"hookSpecificOutput": {"hookEventName": "Elicitation", "action": "accept",
                                         "content": answer(hook_input.get("requested_schema") or {})}}))
