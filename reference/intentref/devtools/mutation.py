"""``intentref mutation``: mutation testing of the reference core and Bridge with mutmut 3.x.

mutmut names each mutant after its file's path below ``src/`` and puts ``mutants/src`` first
on ``sys.path``; our package lives in ``reference/intentref``, so mutmut runs in a staging
folder, ``build/mutation/<profile>/``, laid out the way it expects: ``src`` links to
``reference/``, ``tests/`` holds links to the selected test folders (not tests/node and its
packages), ``conformance/``, ``properties/`` and ``spec/`` are links, and ``pyproject.toml`` is
the checkout's with the profile's ``[tool.mutmut]`` table.

Score = (killed + timeout) / (total - equivalent), where *equivalent* counts the surviving
mutants listed in ``spec/equivalent-mutants.md`` (a timeout made the tests hang, so they did
not pass); the strict score, killed / (total - equivalent), is printed beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import time
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any


# The repository root of a checkout: reference/intentref/devtools/mutation.py -> ../../..
def _find_repo() -> pathlib.Path:
    """The checkout to mutate: the one this module lives in (editable install), else the
    current directory (a non-editable install run from a clone, as CI does)."""
    for candidate in (pathlib.Path(__file__).resolve().parents[3], pathlib.Path.cwd()):
        if (candidate / "pyproject.toml").exists() and (candidate / "reference" / "intentref").is_dir():
            return candidate
    return pathlib.Path.cwd()


_REPO = _find_repo()

# --smoke: two small modules and the tests that reach them; CI runs it.
SMOKE_MUTATE = ["src/intentref/core/text.py", "src/intentref/core/jsonpointer.py"]
SMOKE_TESTS = ["tests/core/test_jsonpointer.py", "tests/mutation/test_text_and_pointer.py"]

# Links the stage makes to the checkout (mutmut's also_copy turns them into copies).
_DATA_LINKS = ("conformance", "properties", "spec")

# An entry of spec/equivalent-mutants.md: - `NAME`: `CODE` -- reason.  CODE is (part of) the
# mutated line; an entry whose mutant no longer shows it (mutmut numbers mutants in source
# order, so edits renumber them) is reported as changed and not counted.
_EQUIVALENT_ENTRY = re.compile(r"^\s*[-*]\s+`(intentref\.[^`]+__mutmut_\d+)`:\s+`(.+?)`\s+(?:--|—)\s+\S")

# Prints, as JSON, the "-" and "+" lines of each named mutant's diff (mutmut's own diff
# code); with the name "*", of every mutant not yet checked.
_DIFFS = """
import json, sys
from mutmut.mutation.diff_apply import get_diff_for_mutant
from mutmut.mutation.data import SourceFileMutationData
from mutmut.utils.file_utils import walk_mutatable_files
want = set(json.loads(sys.stdin.read()))
out = {}
for path in walk_mutatable_files():
    data = SourceFileMutationData(path=path)
    data.load()
    for name, verdict in data.exit_code_by_key.items():
        if name in want or ("*" in want and verdict is None):
            lines = get_diff_for_mutant(name, path=path).splitlines()
            out[name] = {sign: [line[1:].strip() for line in lines
                                if line.startswith(sign) and not line.startswith(sign * 3)] for sign in "-+"}
print(json.dumps(out))
"""

# Generates the mutants as ``mutmut run`` does before it runs anything (its first steps).
_GENERATE = """
import sys
from pathlib import Path
import mutmut.__main__ as main
from mutmut.mutation.trampoline import set_mutant_under_test
set_mutant_under_test("mutant_generation")
Path("mutants").mkdir(exist_ok=True)
main.copy_src_dir()
main.copy_also_copy_files()
main.setup_source_paths()
main.create_mutants(int(sys.argv[1]))
"""

# Records the named mutants as skipped (mutmut's exit code 34), so ``mutmut run`` leaves them.
_SKIP = """
import json, sys
from mutmut.mutation.data import SourceFileMutationData
from mutmut.utils.file_utils import walk_mutatable_files
names = set(json.loads(sys.stdin.read()))
for path in walk_mutatable_files():
    data = SourceFileMutationData(path=path)
    data.load()
    hit = [name for name in data.exit_code_by_key if name in names]
    for name in hit:
        data.exit_code_by_key[name] = 34
    if hit:
        data.save()
"""

# A plain (not f-, r- or b-) double-quoted string literal on one line.
_PLAIN_LITERAL = re.compile(r'(?<![A-Za-z0-9_])"((?:[^"\\]|\\.)*)"')


def is_sentence(text: str) -> bool:
    """A message sentence, what D-ERR-006 calls a fixed English sentence: a space, a lower-case
    letter, a full stop at the end.  Codes, stages, paths and member names never look like it."""
    return " " in text and text.endswith(".") and any(ch.islower() for ch in text)


def is_message_wording(minus: Sequence[str], plus: Sequence[str]) -> bool:
    """True when a mutant only rewords a message: one line changed, and only inside one plain
    string literal that is a sentence, the way mutmut rewords strings (XX..XX, upper, lower)."""
    if len(minus) != 1 or len(plus) != 1:
        return False
    old, new = minus[0], plus[0]
    for found in _PLAIN_LITERAL.finditer(old):
        content = found.group(1)
        if "\\" in content or not is_sentence(content):
            continue
        for variant in ("XX" + content + "XX", content.upper(), content.lower()):
            if variant != content and old[: found.start(1)] + variant + old[found.end(1) :] == new:
                return True
    return False

STATUSES = ("killed", "survived", "timeout", "no_tests", "suspicious", "segfault", "skipped",
            "check_was_interrupted_by_user")  # fmt: skip


@dataclass
class Summary:
    counts: dict[str, int]
    survivors: list[str]
    equivalent: list[str] = field(default_factory=list)  # listed, surviving, still the same mutant
    stale: list[str] = field(default_factory=list)  # listed but not surviving, or a different mutant now
    diffs: dict[str, list[str]] = field(default_factory=dict)  # the "+" lines of each survivor
    message_text: list[str] = field(default_factory=list)  # the equivalent ones that change only a message

    @property
    def total(self) -> int:
        return self.counts.get("total", 0)

    @property
    def judged(self) -> int:
        """What the score is over: all mutants but the equivalent and the skipped (message wording)."""
        return self.total - len(self.equivalent) - self.counts.get("skipped", 0)

    @property
    def score(self) -> float:
        """(killed + timeout) / judged: a mutant that hangs the tests fails them."""
        detected = self.counts.get("killed", 0) + self.counts.get("timeout", 0)
        return detected / self.judged if self.judged else 1.0

    @property
    def score_messages_counted(self) -> float:
        """The score if every mutant that changes only a message's text (skipped or listed) had
        to be killed too: (killed + timeout) / (total - the equivalent ones that are not message text)."""
        judged = self.total - len(self.equivalent) + len(self.message_text)
        detected = self.counts.get("killed", 0) + self.counts.get("timeout", 0)
        return detected / judged if judged else 1.0

    @property
    def strict_score(self) -> float:
        """killed / judged: timeouts counted as not caught."""
        return self.counts.get("killed", 0) / self.judged if self.judged else 1.0

    @property
    def unexplained(self) -> list[str]:
        return [name for name in self.survivors if name not in set(self.equivalent)]

    def to_json(self) -> dict[str, Any]:
        return {**self.counts, "equivalent": len(self.equivalent), "score": round(self.score, 4),
                "strictScore": round(self.strict_score, 4), "messageText": len(self.message_text),
                "scoreMessagesCounted": round(self.score_messages_counted, 4), "survivors": self.unexplained,
                "staleEquivalent": self.stale}  # fmt: skip


def mutmut_table(config: dict[str, Any]) -> str:
    # JSON's strings, numbers, booleans and arrays of them are TOML too.
    return "[tool.mutmut]\n" + "".join(f"{key} = {json.dumps(value, ensure_ascii=False)}\n" for key, value in config.items())


def replace_mutmut_table(pyproject_text: str, config: dict[str, Any]) -> str:
    """The pyproject text with its ``[tool.mutmut]`` table (up to the next table) replaced."""
    lines = pyproject_text.splitlines(keepends=True)
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == "[tool.mutmut]")
    except StopIteration:
        return pyproject_text.rstrip("\n") + "\n\n" + mutmut_table(config)
    end = next((i for i in range(start + 1, len(lines)) if lines[i].lstrip().startswith("[")), len(lines))
    return "".join(lines[:start]) + mutmut_table(config) + "\n" + "".join(lines[end:])


def profile_config(base: dict[str, Any], smoke: bool, paths: Sequence[str]) -> dict[str, Any]:
    config = dict(base)
    if smoke:
        config["only_mutate"] = list(SMOKE_MUTATE)
        config["pytest_add_cli_args_test_selection"] = list(SMOKE_TESTS)
        # The smoke's mutants that hang (a pointer loop that never advances) should cost
        # seconds, not the full run's allowance: the CI budget is two minutes.
        config["timeout_multiplier"] = 2.0
    if paths:
        config["only_mutate"] = [_stage_path(path) for path in paths]
    return config


def _stage_path(path: str) -> str:
    """A checkout path (``reference/intentref/core/text.py``) as the stage names it (``src/...``)."""
    path = path.replace(os.sep, "/")
    if path.startswith("reference/"):
        return "src/" + path[len("reference/"):]
    if path.startswith("intentref/"):
        return "src/" + path
    return path


def _link(target: pathlib.Path, link: pathlib.Path) -> None:
    if link.is_symlink() or link.exists():
        if link.is_symlink() and link.resolve() == target.resolve():
            return
        if link.is_dir() and not link.is_symlink():
            shutil.rmtree(link)
        else:
            link.unlink()
    link.symlink_to(target, target_is_directory=target.is_dir())


def prepare_stage(repo: pathlib.Path, stage: pathlib.Path, config: dict[str, Any], fresh: bool) -> None:
    if fresh and (stage / "mutants").exists():
        shutil.rmtree(stage / "mutants")
    stage.mkdir(parents=True, exist_ok=True)
    _link(repo / "reference", stage / "src")
    for name in _DATA_LINKS:
        _link(repo / name, stage / name)
    # tests/: only the folders the selection names (tests/node holds hundreds of MB of npm
    # packages mutmut would otherwise copy), plus the shared conftest.
    tests = stage / "tests"
    if tests.is_symlink():
        tests.unlink()
    if tests.exists():
        shutil.rmtree(tests)
    tests.mkdir()
    _link(repo / "tests" / "conftest.py", tests / "conftest.py")
    wanted = {"mutation"}
    for selection in config.get("pytest_add_cli_args_test_selection", []):
        parts = pathlib.PurePosixPath(selection.split("::")[0]).parts
        if len(parts) >= 2 and parts[0] == "tests":
            wanted.add(parts[1])
    for name in sorted(wanted):
        source = repo / "tests" / name
        if source.exists():
            _link(source, tests / name)
    text = (repo / "pyproject.toml").read_text("utf-8")
    (stage / "pyproject.toml").write_text(replace_mutmut_table(text, config), "utf-8")


def equivalent_entries(repo: pathlib.Path) -> dict[str, str]:
    """``{mutant name: the mutated code the entry quotes}`` from spec/equivalent-mutants.md."""
    return {name: code for name, (code, _) in _entries(repo).items()}


def _entries(repo: pathlib.Path) -> dict[str, tuple[str, str]]:
    """``{mutant name: (the mutated code quoted, the lower-cased heading it is listed under)}``."""
    path = repo / "spec" / "equivalent-mutants.md"
    if not path.exists():
        return {}
    entries, section = {}, ""
    for line in path.read_text("utf-8").splitlines():
        if line.startswith("## "):
            section = line[3:].strip().lower()
        found = _EQUIVALENT_ENTRY.match(line)
        if found:
            entries[found.group(1)] = (found.group(2), section)
    return entries


def mutant_diffs(stage: pathlib.Path, names: Sequence[str]) -> dict[str, dict[str, list[str]]]:
    """``{name: {"-": removed lines, "+": added lines}}`` of the named mutants ("*": all unchecked)."""
    if not names:
        return {}
    done = _python(stage, "-c", _DIFFS, stdin=json.dumps(list(names)))
    if done.returncode != 0:
        print(f"could not read the mutants' diffs: {done.stderr.strip()[-500:]}", file=sys.stderr)
        return {}
    diffs: dict[str, dict[str, list[str]]] = json.loads(done.stdout)
    return diffs


def _python(stage: pathlib.Path, *args: str, stdin: str | None = None, capture: bool = True) -> subprocess.CompletedProcess[str]:
    # A process of its own: this one has imported the unmutated intentref already.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([sys.executable, *args], cwd=stage, env=env, input=stdin, text=True,
                          capture_output=capture, check=False)  # fmt: skip


def skip_message_wording(stage: pathlib.Path, children: str) -> int:
    """Generate the mutants, then record the message-wording ones as skipped; how many."""
    generated = _python(stage, "-c", _GENERATE, children, stdin="")
    if generated.returncode != 0:
        raise RuntimeError(f"generating the mutants failed: {generated.stderr.strip()[-800:]}")
    diffs = mutant_diffs(stage, ["*"])
    wording = sorted(name for name, diff in diffs.items() if is_message_wording(diff["-"], diff["+"]))
    skipped = _python(stage, "-c", _SKIP, stdin=json.dumps(wording))
    if skipped.returncode != 0:
        raise RuntimeError(f"recording the skipped mutants failed: {skipped.stderr.strip()[-800:]}")
    return len(wording)


def summarize(stage: pathlib.Path, repo: pathlib.Path, results_text: str) -> Summary:
    stats = json.loads((stage / "mutants" / "mutmut-cicd-stats.json").read_text("utf-8"))
    survivors, modules = [], set()
    for line in results_text.splitlines():
        name, _, status = line.strip().rpartition(": ")
        modules.add(name.rpartition(".")[0])
        if status == "survived":
            survivors.append(name)
    # An entry is judged only in a run that mutated its module (a --paths or --smoke run
    # leaves the other modules' entries alone instead of calling them stale).
    entries = _entries(repo)
    listed = {name: code for name, (code, _) in entries.items() if name.rpartition(".")[0] in modules}
    surviving = set(survivors)
    diffs = {name: diff["+"] for name, diff in mutant_diffs(stage, survivors).items()}
    equivalent: list[str] = []
    stale: list[str] = []
    for name, code in listed.items():
        same = name in surviving and any(code in line for line in diffs.get(name, []))
        (equivalent if same else stale).append(name)
    # The entries under a "## Message ..." heading change only a message's text.
    messages = [name for name in equivalent if entries[name][1].startswith("message")]
    return Summary(stats, survivors, equivalent, stale, diffs, messages)


def report(summary: Summary, stage: pathlib.Path, seconds: float, smoke: bool) -> None:
    c = summary.counts
    print()
    print(f"mutation {'smoke ' if smoke else ''}run: {seconds:.0f} s, stats in {stage / 'mutants' / 'mutmut-cicd-stats.json'}")
    print(f"  total      {summary.total}")
    for status in STATUSES:
        if status != "skipped" and (c.get(status, 0) or status in ("killed", "survived", "timeout", "no_tests")):
            print(f"  {status.replace('_', '-'):<10} {c.get(status, 0)}")
    print(f"  equivalent {len(summary.equivalent)} (surviving mutants listed in spec/equivalent-mutants.md; "
          f"{len(summary.message_text)} of them change only a message's text)")  # fmt: skip
    print(f"  skipped    {c.get('skipped', 0)} (only reword a message sentence; not run, see spec/equivalent-mutants.md)")
    print(f"  score      {summary.score:.2%} = (killed + timeout) / (total - equivalent - skipped)")
    print(f"  strict     {summary.strict_score:.2%} = killed / (total - equivalent - skipped)")
    print(f"  messages   {summary.score_messages_counted:.2%} = the score if message-text mutants had to be "
          "killed too")  # fmt: skip
    if summary.unexplained:
        print(f"  {len(summary.unexplained)} surviving mutants are neither killed nor listed as equivalent:")
        for name in summary.unexplained:
            print(f"    {name}: " + " | ".join(f"`{line}`" for line in summary.diffs.get(name, [])))
        print(f"  (the whole diff: cd {stage} && {sys.executable} -m mutmut show NAME)")
    if summary.stale and not smoke:
        print("  entries of spec/equivalent-mutants.md that no longer match a surviving mutant (stale):")
        for name in summary.stale:
            print(f"    {name}")
    print(json.dumps(summary.to_json()))


def run(smoke: bool = False, paths: Sequence[str] = (), max_children: int | None = None,
        work_dir: str | None = None, keep: bool = False, retest_survivors: bool = False,
        min_score: float | None = None, mutate_messages: bool = False) -> int:  # fmt: skip
    repo = _REPO
    pyproject = repo / "pyproject.toml"
    if not pyproject.exists() or not (repo / "reference" / "intentref").is_dir():
        print("intentref mutation needs a checkout of the repository (pyproject.toml, reference/, tests/)",
              file=sys.stderr)  # fmt: skip
        return 2
    try:
        import mutmut  # noqa: F401
    except ImportError:
        print("intentref mutation needs mutmut 3.x: pip install 'intentref[test]' (or pip install mutmut)",
              file=sys.stderr)  # fmt: skip
        return 2
    base = tomllib.loads(pyproject.read_text("utf-8")).get("tool", {}).get("mutmut")
    if not base:
        print(f"{pyproject} has no [tool.mutmut] table", file=sys.stderr)
        return 2
    config = profile_config(base, smoke, paths)
    profile = "smoke" if smoke else ("paths" if paths else "full")
    stage = pathlib.Path(work_dir) if work_dir else repo / "build" / "mutation" / profile
    stage = stage.resolve()
    prepare_stage(repo, stage, config, fresh=not (keep or retest_survivors))
    children = str(max_children or min(2, os.cpu_count() or 1))
    started = time.monotonic()
    names: list[str] = []
    if retest_survivors:
        listed = _python(stage, "-m", "mutmut", "results")
        names = [line.strip().rpartition(": ")[0] for line in listed.stdout.splitlines()
                 if line.strip().endswith(": survived")]  # fmt: skip
        if not names:
            print("no surviving mutants to retest")
    if not (keep or retest_survivors or mutate_messages):
        print(f"{skip_message_wording(stage, children)} mutants only reword a message sentence: recorded as skipped")
    done = _python(stage, "-m", "mutmut", "run", "--max-children", children, *names, capture=False)
    if done.returncode != 0:
        print(f"mutmut run failed (exit status {done.returncode}); see its output above", file=sys.stderr)
        return done.returncode or 1
    seconds = time.monotonic() - started
    exported = _python(stage, "-m", "mutmut", "export-cicd-stats")
    if exported.returncode != 0:
        print(exported.stdout + exported.stderr, file=sys.stderr)
        return exported.returncode
    results = _python(stage, "-m", "mutmut", "results", "--all", "true")  # every mutant: the modules this run mutated
    summary = summarize(stage, repo, results.stdout)
    report(summary, stage, seconds, smoke)
    if min_score is not None and summary.score < min_score:
        print(f"score {summary.score:.2%} is below --min-score {min_score:.2%}", file=sys.stderr)
        return 1
    return 0


def _run_args(args: argparse.Namespace) -> int:
    return run(smoke=args.smoke, paths=args.paths, max_children=args.max_children, work_dir=args.work_dir,
               keep=args.keep, retest_survivors=args.retest_survivors, min_score=args.min_score,
               mutate_messages=args.mutate_messages)  # fmt: skip


def add_parser(sub: Any) -> None:
    p = sub.add_parser("mutation", help="mutation testing of the core and Bridge (mutmut), with the score",
                       description=__doc__.splitlines()[0] if __doc__ else None)  # fmt: skip
    p.add_argument("--smoke", action="store_true",
                   help="mutate only text.py and jsonpointer.py with their tests (CI; under two minutes)")  # fmt: skip
    p.add_argument("--paths", nargs="+", default=[], metavar="FILE",
                   help="mutate only these files (reference/intentref/core/NAME.py) with the full test selection")  # fmt: skip
    p.add_argument("--max-children", type=int, default=None, help="parallel mutant workers (default: 2)")
    p.add_argument("--work-dir", default=None, help="staging folder (default: build/mutation/<profile>)")
    p.add_argument("--keep", action="store_true", help="reuse the previous run's results (mutmut's cache)")
    p.add_argument("--retest-survivors", action="store_true",
                   help="rerun only the previous run's surviving mutants (after adding tests)")  # fmt: skip
    p.add_argument("--mutate-messages", action="store_true",
                   help="also run the mutants that only reword a message sentence (skipped by default)")  # fmt: skip
    p.add_argument("--min-score", type=float, default=None, help="exit 1 when the score is below this (0..1)")
    p.set_defaults(run=_run_args)
