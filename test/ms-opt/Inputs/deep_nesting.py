"""Print a module nested KIND (attr, type, region, alias) DEPTH levels deep:
`python deep_nesting.py KIND DEPTH` (for robustness.test)."""
import sys

T = "tensor<2xf32>"


def module(kind, depth):
    if kind == "attr":
        return "func.func private @f() attributes {x = " + "[" * depth + "]" * depth + "}"
    if kind == "type":
        return "func.func private @f() -> " + "tuple<" * depth + "f32" + ">" * depth
    if kind == "alias":
        lines = ["#a0 = [1]"] + [f"#a{i} = [#a{i - 1}]" for i in range(1, depth)]
        return "\n".join(lines + [f"func.func private @f() attributes {{x = #a{depth - 1}}}"])
    body = f'%r = "ms.exp"(%a) : ({T}) -> {T}\n'
    for _ in range(depth):
        body = (f'%r = "ms.fused"() ({{\n{body}gpu.yield %r : {T}\n}}) '
                f'{{kind = "elementwise"}} : () -> {T}\n')
    return f"func.func @f(%a: {T}) -> {T} {{\n{body}return %r : {T}\n}}"


print(module(sys.argv[1], int(sys.argv[2])))
