"""A scripted MCP server over stdio (the handshake era) whose behaviour the test chooses by name.

    python scripted_server.py CONFIG

Run as an outside command by the runner's tests; it is no implementation of anything.

* An instance named ``refuse-*`` in CONFIG: it exits with status 7 before answering, saying
  so in its own words (a refused configuration, shown another way than the reference's).
* Input ``crash``: it exits with status 3; input ``hang``: it stops answering for a minute.
* Input ``sdk-refuses``: an isError result that is not a BridgeReply (an SDK's input check).
* A prepare on an ``error-*`` instance: an error reply, SCHEMA_UNSUPPORTED; an accept of the
  candidate text ``finish``: a result; anything else (a cancel too): a core task.
"""

import json
import sys
import time

TASK = {"kind": "task", "jobId": "j", "stepToken": "t", "stage": "core", "instructions": "i", "payload": "{}",
        "format": {"kind": "json_object"}}  # fmt: skip
RESULT = {"kind": "result", "result": {"input": "fine", "normalizedInput": "fine", "primaryIntent": None,
          "requirements": [], "prohibitions": [], "intents": [], "data": {}}}  # fmt: skip
ERROR = {"kind": "error", "error": {"code": "SCHEMA_UNSUPPORTED", "stage": "config", "message": "no", "issues": []}}


def answer(arguments: dict) -> dict:
    text = arguments.get("input")
    if text == "crash":
        sys.exit(3)
    if text == "hang":
        time.sleep(60)
    if text == "sdk-refuses":
        return {"content": [{"type": "text", "text": "Input validation error: no"}], "isError": True}
    if arguments.get("candidateText") == "finish":
        reply = RESULT
    else:
        reply = ERROR if str(arguments.get("instance", "")).startswith("error-") else TASK
    return {"content": [{"type": "text", "text": json.dumps(reply)}], "structuredContent": reply,
            "isError": reply["kind"] == "error"}  # fmt: skip


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as file:
        config = json.load(file)["instances"]
    if any(name.startswith("refuse-") for name in config):
        print("scripted: will not serve this configuration", file=sys.stderr)
        sys.exit(7)
    for line in sys.stdin:
        message = json.loads(line)
        method, ident = message.get("method"), message.get("id")
        if ident is None:
            continue
        if method == "initialize":
            result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                      "serverInfo": {"name": "scripted", "version": "0"}}  # fmt: skip
        elif method == "tools/list":
            result = {"tools": []}
        else:
            result = answer(message["params"]["arguments"])
        print(json.dumps({"jsonrpc": "2.0", "id": ident, "result": result}), flush=True)


if __name__ == "__main__":
    main()
