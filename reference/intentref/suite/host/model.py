"""The judge's scripted model (D-HST-001): run once per candidate a host needs.

    python model.py --script FILE --log FILE

Standard library only and run as a file, not as ``-m``: a host starts it for every
candidate, so it must not pay for importing the package (or the MCP SDK).

It reads the task on stdin, takes the next behaviour of ``--script`` (a JSON list, one
entry per run, in the order of runs), logs the run to ``--log`` as one JSON line, and
answers as the behaviour says:

* ``{"answer": VALUE}`` prints VALUE as compact JSON, exit 0; ``"padTo": N`` pads the text
  with spaces to N bytes (still the same JSON value, too large for the Bridge);
* ``{"answerText": TEXT}`` prints TEXT as it is, exit 0;
* ``{"refuse": REASON}`` prints the reason, exit 3; ``{"incomplete": TEXT}`` exit 4;
* ``{"fail": STATUS}`` prints nothing, exits STATUS.

REASON and TEXT may be ``{"repeat": S, "times": N}`` for a long text.  A run beyond the
script is a failure (exit 9), logged as ``unscripted``.
"""

import fcntl
import json
import os
import sys
import time
from typing import Any

REFUSAL_STATUS = 3
INCOMPLETE_STATUS = 4
UNSCRIPTED_STATUS = 9


def text_of(value: Any) -> str:
    if isinstance(value, dict) and "repeat" in value:
        return str(value["repeat"]) * int(value.get("times", 1))
    return str(value)


def answer(behaviour: dict[str, Any]) -> tuple[str, int]:
    """(stdout text, exit status) for one behaviour."""
    if "answer" in behaviour:
        text = json.dumps(behaviour["answer"], ensure_ascii=False, separators=(",", ":"))
        pad = int(behaviour.get("padTo", 0)) - len(text.encode("utf-8"))
        return text + " " * max(pad, 0), 0
    if "answerText" in behaviour:
        return text_of(behaviour["answerText"]), 0
    if "refuse" in behaviour:
        return text_of(behaviour["refuse"]), REFUSAL_STATUS
    if "incomplete" in behaviour:
        return text_of(behaviour["incomplete"]), INCOMPLETE_STATUS
    if "fail" in behaviour:
        return "", int(behaviour["fail"])
    return "", UNSCRIPTED_STATUS


def main(argv: list[str]) -> int:
    script_file = argv[argv.index("--script") + 1]
    log_file = argv[argv.index("--log") + 1]
    stdin = sys.stdin.buffer.read().decode("utf-8", "replace")
    with open(script_file, encoding="utf-8") as file:
        script = json.load(file)
    with open(log_file, "a+", encoding="utf-8") as log:
        # One run at a time: the run's index is the number of runs logged before it.
        fcntl.flock(log, fcntl.LOCK_EX)
        log.seek(0)
        index = sum(1 for line in log if line.strip())
        behaviour = script[index] if index < len(script) else {"unscripted": True}
        text, status = answer(behaviour)
        try:
            task = json.loads(stdin)
        except (ValueError, RecursionError):
            task = None
        record = {"run": index, "t": time.time(), "stdin": stdin if task is None else None, "task": task,
                  "behaviour": behaviour, "stdout": text, "exit": status, "pid": os.getpid()}  # fmt: skip
        log.write(json.dumps(record, ensure_ascii=False) + "\n")
        log.flush()
    sys.stdout.write(text)
    sys.stdout.flush()
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
