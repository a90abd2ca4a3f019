#!/usr/bin/env bash
# The run of the intentref GitHub Action (action.yml): install the suite, run it, give outputs.
#
# Every input comes as an INPUT_* variable, as action.yml's step passes them; the runner's
# GITHUB_ACTION_PATH (the action's own checkout), GITHUB_OUTPUT and GITHUB_STEP_SUMMARY are
# honoured (the summary is appended by intentref itself, D-CNF-061). Run it anywhere with
# those variables set: tests/conformance/test_action.py does.
#
# INTENTREF_PYTHON (a speed-up): an interpreter that already has intentref importable; the
# suite is then not installed into a new venv. Without it the runner's python3 makes a venv
# under RUNNER_TEMP and installs the suite there from the action's checkout.
#
# spec: D-CNF-062 -- the whole run; an input it cannot use is status 2, in one line.
# Exit status: intentref's (0 passed, 1 a case failed, 2 a usage error, 3 the target could
# not start, 4 nothing selected; D-CNF-013), or 2 for an input this script cannot use.
set -uo pipefail

fail_usage() { echo "intentref action: $*" >&2; exit 2; }

action_path="${GITHUB_ACTION_PATH:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
mode="${INPUT_MODE:-conformance}"
target="${INPUT_TARGET:-stdio}"
command="${INPUT_COMMAND:-}"
reports="${INPUT_REPORT_DIR:-intentref-reports}"

python="${INTENTREF_PYTHON:-}"
if [ -z "$python" ]; then
  venv="${RUNNER_TEMP:-${TMPDIR:-/tmp}}/intentref-venv"
  python3 -m venv "$venv" || fail_usage "python3 -m venv failed: set up Python (actions/setup-python) first"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$action_path" \
    || fail_usage "could not install the suite from $action_path"
  python="$venv/bin/python"
fi

mkdir -p "$reports" || fail_usage "report-dir $reports cannot be made"
reports="$(cd "$reports" && pwd)"
json="$reports/report.json" junit="$reports/report.junit.xml" html="$reports/report.html" markdown="$reports/summary.md"

args=()
case "$mode" in
  conformance)
    args+=(conformance)
    case "$target" in
      stdio) [ -n "$command" ] && args+=(--stdio "$command") ;;  # no command: the bundled reference
      http) [ -n "$command" ] || fail_usage "target http needs command: the server's URL"; args+=(--http "$command") ;;
      harness) [ -n "$command" ] || fail_usage "target harness needs command"; args+=(--harness "$command") ;;
      *) fail_usage "target must be stdio, http or harness, not '$target'" ;;
    esac
    [ -n "${INPUT_ERA:-}" ] && args+=(--era "$INPUT_ERA")
    [ -n "${INPUT_EXPECTED_FAILURES:-}" ] && args+=(--expected-failures "$INPUT_EXPECTED_FAILURES")
    ;;
  host)
    [ -n "$command" ] || fail_usage "mode host needs command: the host's command line"
    args+=(host --command "$command")
    case "$target" in
      stdio) ;;
      http) args+=(--http) ;;
      *) fail_usage "mode host serves over stdio or http, not '$target'" ;;
    esac
    for scenario in ${INPUT_SCENARIOS:-}; do args+=(--scenario "$scenario"); done
    ;;
  *) fail_usage "mode must be conformance or host, not '$mode'" ;;
esac
[ -n "${INPUT_LEVEL:-}" ] && args+=(--level "$INPUT_LEVEL")
[ -n "${INPUT_JOBS:-}" ] && args+=(--jobs "$INPUT_JOBS")
args+=(--json "$json" --junit "$junit" --html "$html" --markdown "$markdown")

# Extra arguments are split as a shell would split them, quotes kept, nothing expanded.
extra=()
if [ -n "${INPUT_ARGS:-}" ]; then
  split_args='import shlex, sys; sys.stdout.write("".join(word + "\0" for word in shlex.split(sys.argv[1])))'
  "$python" -c "$split_args" "$INPUT_ARGS" >/dev/null 2>&1 || fail_usage "args cannot be split: $INPUT_ARGS"
  while IFS= read -r -d '' word; do extra+=("$word"); done < <("$python" -c "$split_args" "$INPUT_ARGS")
fi

"$python" -m intentref.cli "${args[@]}" "${extra[@]}"
status=$?

# The outputs, from the JSON report when the run wrote one (a usage error writes none).
if [ -n "${GITHUB_OUTPUT:-}" ]; then
  "$python" - "$json" "$junit" "$html" "$markdown" "$status" >>"$GITHUB_OUTPUT" <<'PY'
import json, os, sys
json_path, junit, html, markdown, status = sys.argv[1:]
counts = {"passed": "", "failed": "", "errored": "", "unsupported": ""}
if os.path.exists(json_path):
    report = json.load(open(json_path, encoding="utf-8"))
    summary = report["summary"]
    if "scenarios" in summary:  # intentref host's report: a scenario passes or fails
        counts = {"passed": summary["scenarios"] - summary["failed"], "failed": summary["failed"],
                  "errored": 0, "unsupported": 0}
    else:
        counts = {name: summary[name] for name in counts}
written = {name: path if os.path.exists(path) else "" for name, path in
           (("json", json_path), ("junit", junit), ("html", html), ("markdown", markdown))}
for name, value in {**counts, **written, "exit-status": status}.items():
    print(f"{name}={value}")
PY
fi
exit "$status"
