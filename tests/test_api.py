"""The public Python API: what ``import stream_lsh`` gives, the README's examples, one error tree."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

import stream_lsh
from stream_lsh import (
    DedupConfig,
    Deduplicator,
    Page,
    PageError,
    SettingsError,
    StateMismatchError,
    StreamLshError,
    errors,
    load_state,
    page_from_dict,
    save_state,
)
from stream_lsh.settings import Settings

README = Path(__file__).resolve().parents[1] / "README.md"


def readme_python_examples() -> list[str]:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Use from Python") :]
    section = section[: section.index("\n## ", 1)]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def test_every_exported_name_exists_and_the_package_marks_itself_typed():
    assert all(hasattr(stream_lsh, name) for name in stream_lsh.__all__)
    assert (Path(stream_lsh.__file__).parent / "py.typed").exists()


@pytest.mark.parametrize("index", range(4))
def test_the_readme_examples_run_and_print_what_the_readme_says(index):
    examples = readme_python_examples()
    assert len(examples) == 4
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(examples[index], f"README example {index + 1}", "exec"), {})
    lines = printed.getvalue().splitlines()
    if index == 0:
        assert lines == ["0 unique 0 None", "1 duplicate 0 0", "2 unique 2 None"]
    elif index == 1:
        assert [eval(line)["status"] for line in lines] == ["unique", "duplicate"]  # dicts, as printed
    elif index == 2:
        assert lines == ["a", "True", "unique"]  # probe, remove, probe
    else:
        assert lines == ["monday-1"]


def test_state_of_another_scheme_is_refused_through_the_api(tmp_path):
    path = tmp_path / "state.npz"
    engine = Deduplicator()
    engine.process(Page(id="a", text="Storm Amy reached the coast on Friday night and cut power to homes."))
    save_state(engine, path)
    with pytest.raises(StateMismatchError, match="seed"):
        load_state(Deduplicator(DedupConfig(seed=7)), path)


def test_every_error_raised_on_purpose_is_a_stream_lsh_error():
    with pytest.raises(StreamLshError) as bad_page:
        page_from_dict({"text": "no id"})
    assert isinstance(bad_page.value, PageError) and bad_page.value.code == "missing_id"
    with pytest.raises(StreamLshError):
        Settings.load(threshold=2.0)
    assert issubclass(SettingsError, ValueError) and issubclass(PageError, ValueError)
    defined = [
        value for value in vars(errors).values() if isinstance(value, type) and issubclass(value, Exception)
    ]
    assert len(defined) == 12 and all(issubclass(error, StreamLshError) for error in defined)


def test_no_module_of_the_package_defines_an_exception_outside_the_tree():
    package = Path(stream_lsh.__file__).parent
    stray = [
        f"{path.relative_to(package)}: {match}"
        for path in package.rglob("*.py")
        if path.name != "errors.py"
        for match in re.findall(r"^class (\w+)\((?:\w+Error|Exception)\)", path.read_text(), re.M)
    ]
    assert stray == []


def test_exit_codes_are_defined_once():
    package = Path(stream_lsh.__file__).parent
    literal_exits = [
        f"{path.relative_to(package)}: {line.strip()}"
        for path in package.rglob("*.py")
        for line in path.read_text().splitlines()
        if re.search(r"\b(?:sys\.exit|os\._exit)\(\d", line)
    ]
    assert literal_exits == []
    assert [int(code) for code in errors.ExitCode] == [0, 1, 2, 69, 70, 78]
