"""The MindSpore coverage table (pyfront/mindspore_modules/COVERAGE.md and README's coverage
section) is generated from mscc itself and must not drift from what mscc exports."""
import pytest

from mscc.pyfront.mindspore_modules import coverage

FIX = "run python -m mscc.pyfront.mindspore_modules.coverage"


@pytest.fixture(scope="module")
def snapshot():
    return coverage.read_snapshot()


def test_the_checked_in_page_is_the_generated_text(snapshot):
    names, version = snapshot
    with open(coverage.PAGE_PATH) as f:
        assert f.read() == coverage.page_text(names, version), \
            f"pyfront/mindspore_modules/COVERAGE.md is stale: {FIX}"


def test_readmes_coverage_section_is_the_generated_text(snapshot):
    names, version = snapshot
    with open(coverage.README_PATH) as f:
        readme = f.read()
    assert readme == coverage.readme_text(readme, names, version), \
        f"README.md's coverage section is stale: {FIX}"


def test_check_mode_reports_a_stale_page(tmp_path, monkeypatch, capsys):
    page, readme = tmp_path / "COVERAGE.md", tmp_path / "README.md"
    page.write_text("old\n")
    readme.write_text(f"intro\n{coverage.BEGIN}\nold\n{coverage.END}\nrest\n")
    monkeypatch.setattr(coverage, "PAGE_PATH", str(page))
    monkeypatch.setattr(coverage, "README_PATH", str(readme))
    assert coverage.main(["--check"]) == 1
    assert "stale: run python -m mscc.pyfront.mindspore_modules.coverage" \
        in capsys.readouterr().err
    assert coverage.main([]) == 0
    assert coverage.main(["--check"]) == 0
    text = readme.read_text()
    assert text.startswith("intro\n") and text.endswith("\nrest\n") and "| all |" in text


def test_a_readme_without_markers_is_an_error(snapshot):
    with pytest.raises(ValueError, match="coverage:begin"):
        coverage.readme_text("no section here\n", *snapshot)


def test_the_snapshot_has_every_category_and_its_version(snapshot):
    names, version = snapshot
    assert version.count(".") == 2 and set(names) == set(coverage.CATEGORIES)
    assert all(len(set(v)) == len(v) > 0 for v in names.values())
    assert {"matmul", "reshape"} <= set(names["ops"])
    assert {"MatMul", "Conv2D"} <= set(names["primitives"])
    assert "init_flag" not in names["Tensor"]          # C++ plumbing, not API


def _row(key, name, names):
    return dict((n, (ok, note)) for n, ok, note in coverage.category_rows(key, names))[name]


def test_known_names_are_counted_right():
    assert _row("ops", "matmul", ["matmul"]) == (True, "")
    assert _row("primitives", "MatMul", ["MatMul"]) == (True, "")
    assert _row("nn.layers", "Dense", ["Dense"]) == (True, "")
    assert _row("Tensor", "shape", ["shape"]) == (True, "")       # a property counts
    assert _row("Tensor", "reshape", ["reshape"]) == (True, "")
    assert _row("primitives", "Conv2D", ["Conv2D"]) == (True, "")
    assert _row("primitives", "DepthwiseConv2dNative", ["DepthwiseConv2dNative"]) == (False, "")
    assert _row("ops", "not_an_op_anywhere", ["not_an_op_anywhere"]) == (False, "")
    # Right name, wrong kind: mscc.ops.MatMul is a Primitive class, which the functions'
    # category (MindSpore's are functions) must not count.
    assert _row("ops", "MatMul", ["MatMul"])[0] is False


def test_another_spelling_is_noted_but_not_counted():
    # MindSpore spells neither `Matmul` nor `re_shape`; mscc's `MatMul`/`reshape` are noted.
    assert _row("primitives", "Matmul", ["Matmul"]) == (False, "mscc has `MatMul`")
    assert _row("ops", "re_shape", ["re_shape"]) == (False, "mscc has `reshape`")
    # ... unless MindSpore has that spelling too: then it is its own row.
    assert _row("primitives", "Matmul", ["Matmul", "MatMul"]) == (False, "")
    # A trailing underscore is another API (in-place), not another spelling.
    assert _row("ops", "reshape_", ["reshape_"]) == (False, "")
