"""``intentref mutation``: the parts that decide what is run and how it is counted.

The mutation run itself takes long (``intentref mutation``); CI runs ``--smoke``.  These
tests check, fast, the stage layout and config the command hands mutmut, which mutants it
records as message wording (skipped), and how spec/equivalent-mutants.md entries are read.
"""

from __future__ import annotations

import pathlib
import tomllib

import pytest

from intentref.devtools import mutation

REPO = pathlib.Path(__file__).resolve().parent.parent.parent
# mutmut runs the tests in its copy (mutants/), which has src/ where a checkout has reference/.
pytestmark = pytest.mark.skipif(not (REPO / "reference").is_dir(), reason="needs a checkout, not mutmut's copy")
SENTENCE = 'raise _unsupported(path, "multipleOf must be a number greater than 0.")'


@pytest.mark.parametrize(
    "mutated",
    [
        'raise _unsupported(path, "XXmultipleOf must be a number greater than 0.XX")',
        'raise _unsupported(path, "MULTIPLEOF MUST BE A NUMBER GREATER THAN 0.")',
        'raise _unsupported(path, "multipleof must be a number greater than 0.")',
    ],
)
def test_rewording_a_message_sentence_is_message_wording(mutated):
    assert mutation.is_message_wording([SENTENCE], [mutated])


@pytest.mark.parametrize(
    ("original", "mutated"),
    [
        (SENTENCE, 'raise _unsupported(None, "multipleOf must be a number greater than 0.")'),  # the path
        (SENTENCE, "raise _unsupported(path, None)"),  # no message at all: a wire fault
        (SENTENCE, 'raise _unsupported(path, "something else entirely.")'),
        ('yield "/intents", "intents must be an array."', 'yield "XX/intentsXX", "intents must be an array."'),
        ('return error("CONFIG_INVALID", "config", m)', 'return error("config_invalid", "config", m)'),
        ('x = f"{a} is required."', 'x = f"XX{a} is required.XX"'),  # f-strings are never counted
        ('return "null"', 'return "XXnullXX"'),  # a word, not a sentence
    ],
)
def test_anything_else_is_not_message_wording(original, mutated):
    assert not mutation.is_message_wording([original], [mutated])


def test_two_changed_lines_are_not_message_wording():
    assert not mutation.is_message_wording([SENTENCE, "x = 1"], [SENTENCE.upper(), "x = 2"])


def test_the_profile_configs():
    base = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["tool"]["mutmut"]
    assert base["source_paths"] == ["src/intentref"]
    assert all(path.startswith("src/intentref/") and (REPO / "reference" / path[4:]).is_file()
               for path in base["only_mutate"])  # fmt: skip
    smoke = mutation.profile_config(base, smoke=True, paths=())
    assert smoke["only_mutate"] == mutation.SMOKE_MUTATE
    assert all((REPO / path.split("::")[0]).exists() for path in smoke["pytest_add_cli_args_test_selection"])
    chosen = mutation.profile_config(base, smoke=False, paths=["reference/intentref/core/text.py", "intentref/core/limits.py"])
    assert chosen["only_mutate"] == ["src/intentref/core/text.py", "src/intentref/core/limits.py"]
    assert chosen["pytest_add_cli_args_test_selection"] == base["pytest_add_cli_args_test_selection"]


def test_the_mutmut_table_is_replaced_and_nothing_else():
    text = '[project]\nname = "x"\n\n[tool.mutmut]\nold = 1\n\n[tool.other]\nkeep = true\n'
    out = mutation.replace_mutmut_table(text, {"only_mutate": ["src/a.py"], "debug": False})
    parsed = tomllib.loads(out)
    assert parsed["tool"]["mutmut"] == {"only_mutate": ["src/a.py"], "debug": False}
    assert parsed["tool"]["other"] == {"keep": True} and parsed["project"] == {"name": "x"}


def test_the_stage_links_the_checkout_and_leaves_out_the_node_packages(tmp_path):
    base = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["tool"]["mutmut"]
    stage = tmp_path / "stage"
    mutation.prepare_stage(REPO, stage, base, fresh=True)
    assert (stage / "src").resolve() == (REPO / "reference").resolve()
    assert (stage / "src" / "intentref" / "devtools" / "mutation.py").is_file()
    for name in ("conformance", "properties", "spec"):
        assert (stage / name).resolve() == (REPO / name).resolve()
    linked = {p.name for p in (stage / "tests").iterdir()}
    assert {"conftest.py", "mutation", "core", "bridge", "properties"} <= linked and "node" not in linked
    staged = tomllib.loads((stage / "pyproject.toml").read_text("utf-8"))
    assert staged["tool"]["mutmut"] == base and "pytest" in staged["tool"]


def test_equivalent_entries_are_read_with_their_code(tmp_path):
    (tmp_path / "spec").mkdir()
    (tmp_path / "spec" / "equivalent-mutants.md").write_text(
        "# x\n\n- `intentref.a.x_f__mutmut_3`: `y = None` -- a cache miss only costs time.\n"
        "- `intentref.a.x_g__mutmut_1`: no code quoted, not an entry\n",
        "utf-8",
    )
    assert mutation.equivalent_entries(tmp_path) == {"intentref.a.x_f__mutmut_3": "y = None"}


def test_every_listed_equivalent_mutant_has_code_and_a_reason():
    text = (REPO / "spec" / "equivalent-mutants.md").read_text("utf-8")
    listed = [line for line in text.splitlines() if line.startswith("- `intentref.")]
    assert listed and len(listed) == len(mutation.equivalent_entries(REPO))


def test_the_checkout_is_found_from_the_module_not_the_working_directory(tmp_path, monkeypatch):
    # The module sits three folders below the root (reference/intentref/devtools/, issue 18):
    # run from elsewhere, an editable install still mutates its own checkout.
    # CI installs a wheel, where the module is no checkout's and the working directory decides.
    module_checkout = pathlib.Path(mutation.__file__).resolve().parents[3]
    monkeypatch.chdir(tmp_path)
    if (module_checkout / "pyproject.toml").exists():
        assert module_checkout == REPO.resolve()
        assert mutation._find_repo() == module_checkout
    else:
        assert mutation._find_repo() == tmp_path  # no checkout anywhere: the working directory
        monkeypatch.chdir(REPO)
        assert mutation._find_repo() == REPO
