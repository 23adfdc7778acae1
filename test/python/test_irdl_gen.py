"""dialects/ms.irdl.mlir is generated from the op registry and must not drift from it."""
from mscc.dialects import irdl_gen
from mscc.dialects.registry import Operand, OpDef


def test_the_checked_in_irdl_file_is_the_generated_text():
    with open(irdl_gen.IRDL_PATH) as f:
        assert f.read() == irdl_gen.irdl_text(), \
            "dialects/ms.irdl.mlir is stale: run python -m mscc.dialects.irdl_gen"


def test_check_mode_reports_a_stale_file(tmp_path, monkeypatch, capsys):
    stale = tmp_path / "ms.irdl.mlir"
    stale.write_text(irdl_gen.irdl_text().replace("@softmax", "@softmax2"))
    monkeypatch.setattr(irdl_gen, "IRDL_PATH", str(stale))
    assert irdl_gen.main(["--check"]) == 1
    assert "stale" in capsys.readouterr().err
    assert irdl_gen.main([]) == 0          # rewrites it
    assert irdl_gen.main(["--check"]) == 0


def test_an_op_definition_renders_every_structural_part():
    d = OpDef(name="ms.example", operands=(Operand("x"), Operand("axis", "optional")),
              infer=None, attrs={"keep_dims": "bool", "perm": "ints"},
              results=(("output", "tensor"), ("fn", "function")), regions=("body",),
              structure_note="why it looks\nlike this")
    assert irdl_gen._operation(d) == [
        "  irdl.operation @example {",
        "    // why it looks",
        "    // like this",
        '    %x = irdl.base "!builtin.tensor"',
        '    %axis = irdl.base "!builtin.tensor"',
        '    %output = irdl.base "!builtin.tensor"',
        '    %fn = irdl.base "!builtin.function"',
        '    %keep_dims_attr = irdl.base "#builtin.integer"',
        '    %perm_attr = irdl.base "#builtin.dense_array"',
        "    %body = irdl.region with size 1",
        "    irdl.operands(x: %x, axis: optional %axis)",
        "    irdl.results(output: %output, fn: %fn)",
        '    irdl.attributes {"keep_dims" = %keep_dims_attr, "perm" = %perm_attr}',
        "    irdl.regions(body: %body)",
        "  }"]
