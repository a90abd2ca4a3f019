"""``intentref mutation``: mutation testing of the reference core and Bridge with mutmut 3.x.

mutmut names each mutant after the path of its file below ``./``, ``src/`` or ``source/``
and puts ``mutants/<that folder>`` first on ``sys.path``; our package lives in
``reference/intentref``, so mutmut cannot run in the checkout itself (the mutants would be
named ``reference.intentref...`` while the tests import ``intentref...``, and the tests
would import the original code).  This command therefore runs mutmut in a staging folder,
``build/mutation/<profile>/``, laid out the way mutmut expects:

    src/            -> link to reference/ (the package, mutated in mutants/src/intentref)
    tests/          the test folders mutmut runs (links), not tests/node and its packages
    conformance/, properties/, spec/  -> links (the data the tests read)
    pyproject.toml  the checkout's, with the profile's [tool.mutmut] table

mutmut copies all of it into ``<stage>/mutants/``, runs the tests there (in its own
process, so ``import intentref`` resolves to the mutated copy: the checkout's path is
taken off ``sys.path``), and this command then runs ``mutmut export-cicd-stats`` and
prints the counts of ``<stage>/mutants/mutmut-cicd-stats.json`` and the score.

Profiles: the full run uses ``[tool.mutmut]`` of ``pyproject.toml`` as it stands; ``--smoke``
(what CI runs, well under two minutes) mutates ``text.py`` and ``jsonpointer.py`` only,
with the tests that exercise them.  ``--paths`` replaces the files to mutate.

Score = (killed + timeout) / (total - equivalent), where *equivalent* counts the surviving
mutants listed in ``spec/equivalent-mutants.md`` (each with the mutated code and a one-line
reason) and a timeout is a mutant that made the tests hang, so they did not pass; the
strict score, killed / (total - equivalent), is printed beside it.  Survivors, no-tests and
every other verdict count against both.
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


# The repository root of a checkout: reference/intentref/mutation.py -> ../..
def _find_repo() -> pathlib.Path:
    """The checkout to mutate: the one this module lives in (editable install), else the
    current directory (a non-editable install run from a clone, as CI does)."""
    for candidate in (pathlib.Path(__file__).resolve().parent.parent.parent, pathlib.Path.cwd()):
        if (candidate / "pyproject.toml").exists() and (candidate / "reference" / "intentref").is_dir():
            return candidate
    return pathlib.Path.cwd()


_REPO = _find_repo()

# --smoke: two small modules and the tests that reach them; CI runs it.
SMOKE_MUTATE = ["src/intentref/text.py", "src/intentref/jsonpointer.py"]
SMOKE_TESTS = ["tests/core/test_jsonpointer.py", "tests/mutation/test_text_and_pointer.py"]

# Links the stage makes to the checkout (mutmut's also_copy turns them into copies).
_DATA_LINKS = ("conformance", "properties", "spec")

# An entry of spec/equivalent-mutants.md: - `NAME`: `CODE` -- reason.  CODE is (part of) the
# mutated line; an entry whose mutant no longer shows it (mutmut numbers mutants in source
# order, so edits renumber them) is reported as changed and not counted.
_EQUIVALENT_ENTRY = re.compile(r"^\s*[-*]\s+`(intentref\.[^`]+__mutmut_\d+)`:\s+`(.+?)`\s+(?:--|—)\s+\S")

# Prints, as JSON, the "+" lines of each named mutant's diff (mutmut's own diff code).
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
    for name in data.exit_code_by_key:
        if name in want:
            diff = get_diff_for_mutant(name, path=path)
            out[name] = [line[1:].strip() for line in diff.splitlines()
                         if line.startswith("+") and not line.startswith("+++")]
print(json.dumps(out))
"""

STATUSES = ("killed", "survived", "timeout", "no_tests", "suspicious", "segfault", "skipped",
            "check_was_interrupted_by_user")  # fmt: skip


@dataclass
class Summary:
    counts: dict[str, int]
    survivors: list[str]
    equivalent: list[str] = field(default_factory=list)  # listed, surviving, still the same mutant
    stale: list[str] = field(default_factory=list)  # listed but not surviving, or a different mutant now
    diffs: dict[str, list[str]] = field(default_factory=dict)  # the "+" lines of each survivor

    @property
    def total(self) -> int:
        return self.counts.get("total", 0)

    @property
    def judged(self) -> int:
        return self.total - len(self.equivalent)

    @property
    def score(self) -> float:
        """(killed + timeout) / (total - equivalent): a mutant that hangs the tests fails them."""
        detected = self.counts.get("killed", 0) + self.counts.get("timeout", 0)
        return detected / self.judged if self.judged else 1.0

    @property
    def strict_score(self) -> float:
        """killed / (total - equivalent): timeouts counted as not caught."""
        return self.counts.get("killed", 0) / self.judged if self.judged else 1.0

    @property
    def unexplained(self) -> list[str]:
        return [name for name in self.survivors if name not in set(self.equivalent)]

    def to_json(self) -> dict[str, Any]:
        return {**self.counts, "equivalent": len(self.equivalent), "score": round(self.score, 4),
                "strictScore": round(self.strict_score, 4), "survivors": self.unexplained,
                "staleEquivalent": self.stale}  # fmt: skip


def _toml_value(value: Any) -> str:
    # JSON's strings, numbers, booleans and arrays of them are TOML too.
    return json.dumps(value, ensure_ascii=False)


def mutmut_table(config: dict[str, Any]) -> str:
    lines = ["[tool.mutmut]"]
    lines += [f"{key} = {_toml_value(value)}" for key, value in config.items()]
    return "\n".join(lines) + "\n"


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
    """A checkout path (``reference/intentref/text.py``) as the stage names it (``src/...``)."""
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


def _mutmut(stage: pathlib.Path, *args: str, capture: bool = False) -> subprocess.CompletedProcess[str]:
    # A process of its own: this one has imported the unmutated intentref already.
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return subprocess.run([sys.executable, "-m", "mutmut", *args], cwd=stage, env=env, text=True,
                          capture_output=capture, check=False)  # fmt: skip


def equivalent_entries(repo: pathlib.Path) -> dict[str, str]:
    """``{mutant name: the mutated code the entry quotes}`` from spec/equivalent-mutants.md."""
    path = repo / "spec" / "equivalent-mutants.md"
    if not path.exists():
        return {}
    entries = {}
    for line in path.read_text("utf-8").splitlines():
        found = _EQUIVALENT_ENTRY.match(line)
        if found:
            entries[found.group(1)] = found.group(2)
    return entries


def mutant_diffs(stage: pathlib.Path, names: Sequence[str]) -> dict[str, list[str]]:
    if not names:
        return {}
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-c", _DIFFS], cwd=stage, env=env, input=json.dumps(list(names)),
                          text=True, capture_output=True, check=False)  # fmt: skip
    if done.returncode != 0:
        print(f"could not read the mutants' diffs: {done.stderr.strip()[-500:]}", file=sys.stderr)
        return {}
    diffs: dict[str, list[str]] = json.loads(done.stdout)
    return diffs


def summarize(stage: pathlib.Path, repo: pathlib.Path, results_text: str) -> Summary:
    stats = json.loads((stage / "mutants" / "mutmut-cicd-stats.json").read_text("utf-8"))
    survivors = []
    for line in results_text.splitlines():
        name, _, status = line.strip().rpartition(": ")
        if status == "survived":
            survivors.append(name)
    listed = equivalent_entries(repo)
    surviving = set(survivors)
    diffs = mutant_diffs(stage, survivors)
    equivalent: list[str] = []
    stale: list[str] = []
    for name, code in listed.items():
        same = name in surviving and any(code in line for line in diffs.get(name, []))
        (equivalent if same else stale).append(name)
    return Summary(stats, survivors, equivalent, stale, diffs)


def report(summary: Summary, stage: pathlib.Path, seconds: float, smoke: bool) -> None:
    c = summary.counts
    print()
    print(f"mutation {'smoke ' if smoke else ''}run: {seconds:.0f} s, stats in {stage / 'mutants' / 'mutmut-cicd-stats.json'}")
    print(f"  total      {summary.total}")
    for status in STATUSES:
        if c.get(status, 0) or status in ("killed", "survived", "timeout", "no_tests"):
            print(f"  {status.replace('_', '-'):<10} {c.get(status, 0)}")
    print(f"  equivalent {len(summary.equivalent)} (surviving mutants listed in spec/equivalent-mutants.md)")
    print(f"  score      {summary.score:.2%} = (killed + timeout) / (total - equivalent)")
    print(f"  strict     {summary.strict_score:.2%} = killed / (total - equivalent)")
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
        min_score: float | None = None) -> int:  # fmt: skip
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
        listed = _mutmut(stage, "results", capture=True)
        names = [line.strip().rpartition(": ")[0] for line in listed.stdout.splitlines()
                 if line.strip().endswith(": survived")]  # fmt: skip
        if not names:
            print("no surviving mutants to retest")
    done = _mutmut(stage, "run", "--max-children", children, *names)
    if done.returncode != 0:
        print(f"mutmut run failed (exit status {done.returncode}); see its output above", file=sys.stderr)
        return done.returncode or 1
    seconds = time.monotonic() - started
    exported = _mutmut(stage, "export-cicd-stats", capture=True)
    if exported.returncode != 0:
        print(exported.stdout + exported.stderr, file=sys.stderr)
        return exported.returncode
    results = _mutmut(stage, "results", capture=True)
    summary = summarize(stage, repo, results.stdout)
    report(summary, stage, seconds, smoke)
    if min_score is not None and summary.score < min_score:
        print(f"score {summary.score:.2%} is below --min-score {min_score:.2%}", file=sys.stderr)
        return 1
    return 0


def _run_args(args: argparse.Namespace) -> int:
    return run(smoke=args.smoke, paths=args.paths, max_children=args.max_children, work_dir=args.work_dir,
               keep=args.keep, retest_survivors=args.retest_survivors, min_score=args.min_score)  # fmt: skip


def add_parser(sub: Any) -> None:
    p = sub.add_parser("mutation", help="mutation testing of the core and Bridge (mutmut), with the score",
                       description=__doc__.splitlines()[0] if __doc__ else None)  # fmt: skip
    p.add_argument("--smoke", action="store_true",
                   help="mutate only text.py and jsonpointer.py with their tests (CI; under two minutes)")  # fmt: skip
    p.add_argument("--paths", nargs="+", default=[], metavar="FILE",
                   help="mutate only these files (reference/intentref/NAME.py) with the full test selection")  # fmt: skip
    p.add_argument("--max-children", type=int, default=None, help="parallel mutant workers (default: 2)")
    p.add_argument("--work-dir", default=None, help="staging folder (default: build/mutation/<profile>)")
    p.add_argument("--keep", action="store_true", help="reuse the previous run's results (mutmut's cache)")
    p.add_argument("--retest-survivors", action="store_true",
                   help="rerun only the previous run's surviving mutants (after adding tests)")  # fmt: skip
    p.add_argument("--min-score", type=float, default=None, help="exit 1 when the score is below this (0..1)")
    p.set_defaults(run=_run_args)
