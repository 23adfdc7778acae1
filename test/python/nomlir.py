"""Running code in a fresh interpreter where `import mlir` fails: the runtime, `import mscc`
and the op registry promise to work without the compiler (GPU machines have only numpy and
cuda-bindings)."""
import subprocess
import sys
import textwrap

BLOCK_MLIR = textwrap.dedent("""
    import sys

    class _NoMlir:
        def find_spec(self, name, path=None, target=None):
            if name == "mlir" or name.startswith("mlir."):
                raise ImportError("mlir is blocked in this test")
    sys.meta_path.insert(0, _NoMlir())
""")


def run_without_mlir(code, **kwargs):
    """subprocess.run of `code` (dedented) after BLOCK_MLIR, output captured as text."""
    return subprocess.run([sys.executable, "-c", BLOCK_MLIR + textwrap.dedent(code)],
                          capture_output=True, text=True, **kwargs)
