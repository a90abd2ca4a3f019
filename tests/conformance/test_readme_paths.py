"""The README's paths work as written on a fresh machine: the Inspector command, and the setup
script's wait for another apt-get.

Nothing is skipped: a missing Node package fails with the command that installs it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text("utf-8")
NODE_DIR = ROOT / "tests" / "node"
INSPECTOR_PACKAGE = NODE_DIR / "node_modules" / "@modelcontextprotocol" / "inspector" / "package.json"
APT_GET_WAITING = ROOT / ".ci" / "apt-get-waiting"


def _inspector_command() -> str:
    marker = README.index("<!-- inspector-command -->")
    block = re.match(r"\s*```bash\n(.*?)```", README[marker + len("<!-- inspector-command -->") :], re.S)
    assert block is not None, "the Inspector command block follows its marker"
    return block.group(1).strip()


def test_the_inspector_is_pinned_with_the_version_the_readme_names() -> None:
    manifest = json.loads((NODE_DIR / "package.json").read_text("utf-8"))
    version = manifest["dependencies"]["@modelcontextprotocol/inspector"]
    assert re.fullmatch(r"\d+\.\d+\.\d+", version), "an exact version, never a range"
    lock = json.loads((NODE_DIR / "package-lock.json").read_text("utf-8"))
    assert lock["packages"]["node_modules/@modelcontextprotocol/inspector"]["version"] == version
    # The version in the README's prose is one of tests/spec/test_documented_figures.py's figures.
    assert f"@modelcontextprotocol/inspector@{version}" in README
    assert "npx -y " in README and "npx @modelcontextprotocol" not in README  # -y: no prompt without a terminal


def test_the_readme_inspector_command_lists_the_tools(tmp_path: Path) -> None:
    assert INSPECTOR_PACKAGE.exists(), "run `(cd tests/node && npm ci)` (bash .ci/setup does)"
    config = tmp_path / "instances.json"
    config.write_text(json.dumps({"instances": {"default": {"language": "zh-CN"}}}), "utf-8")
    command = _inspector_command()
    assert " --config instances.json " in command
    # As written, from the repository root; only the example file's path is this test's own.
    done = subprocess.run(["bash", "-c", command.replace(" --config instances.json ", f" --config {config} ")],
                          cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
                          env={k: v for k, v in os.environ.items() if k != "NODE_OPTIONS"})  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    tools = [tool["name"] for tool in json.loads(done.stdout)["tools"]]
    assert tools == ["intent_prepare", "intent_accept", "intent_cancel"]


# --------------------------------------------------------------------------- .ci/apt-get-waiting
#
# The lock is the machine's: holding the real apt lock in a test would stall every other apt
# user on it, so a stand-in `apt-get` on PATH plays a busy apt (it is a real process run by
# the real script; only the package manager is replaced).

_BUSY_APT = """#!/usr/bin/env bash
echo "$*" >> "$CALLS"
count=$(wc -l < "$CALLS")
if [ "$count" -le "$BUSY_TIMES" ]; then
  echo "E: Could not get lock /var/lib/apt/lists/lock. It is held by process 4242 (apt-get)" >&2
  echo "E: Unable to lock directory /var/lib/apt/lists/" >&2
  exit 100
fi
if [ -n "${OTHER_FAILURE:-}" ]; then
  echo "E: Unable to locate package chromium-nonesuch" >&2
  exit 100
fi
exit 0
"""


def _apt(tmp_path: Path, busy_times: int, timeout: int = 60, other_failure: bool = False,
         ) -> tuple[subprocess.CompletedProcess[str], list[str]]:  # fmt: skip
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    fake = bin_dir / "apt-get"
    fake.write_text(_BUSY_APT, "utf-8")
    fake.chmod(0o755)
    calls = tmp_path / "calls"
    calls.write_text("", "utf-8")
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "CALLS": str(calls), "BUSY_TIMES": str(busy_times),
           "APT_LOCK_TIMEOUT": str(timeout), "APT_LOCK_RETRY_SECONDS": "0.1"}  # fmt: skip
    if other_failure:
        env["OTHER_FAILURE"] = "1"
    done = subprocess.run(["bash", str(APT_GET_WAITING), "update", "-qq"], capture_output=True, text=True,
                          timeout=120, env=env, check=False)  # fmt: skip
    return done, calls.read_text("utf-8").splitlines()


def test_setup_waits_for_another_apt_to_release_its_lock(tmp_path: Path) -> None:
    done, calls = _apt(tmp_path, busy_times=3)
    assert done.returncode == 0, done.stderr
    assert len(calls) == 4
    assert all(call == "-o DPkg::Lock::Timeout=60 update -qq" for call in calls)
    assert done.stderr.count("holds the apt lock; waiting up to 60s") == 1


def test_setup_gives_up_on_a_lock_held_past_the_timeout(tmp_path: Path) -> None:
    # 3 s, not 1: the deadline is counted in whole seconds from the first call, so with 1 s a
    # first call that ends after the next second starts (a busy machine) was the only one.
    done, calls = _apt(tmp_path, busy_times=10_000, timeout=3)
    assert done.returncode == 100
    assert "the apt lock was still held after 3s" in done.stderr
    assert 2 <= len(calls) < 100


def test_setup_reports_any_other_apt_failure_at_once(tmp_path: Path) -> None:
    done, calls = _apt(tmp_path, busy_times=0, other_failure=True)
    assert done.returncode == 100 and len(calls) == 1
    assert "Unable to locate package" in done.stderr and "waiting" not in done.stderr


def test_setup_uses_the_waiting_apt_get() -> None:
    setup = (ROOT / ".ci" / "setup").read_text("utf-8")
    runs = [line for line in setup.splitlines() if re.search(r"\bapt-get(-waiting)? (update|install)\b", line)
            and not line.lstrip().startswith("#")]  # fmt: skip
    assert len(runs) == 2 and all(".ci/apt-get-waiting " in line for line in runs), runs
