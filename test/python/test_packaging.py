"""The installed package has every subpackage: pyproject.toml lists them by hand (the
repository root is the `mscc` package), and a folder missing from the list is missing from a
non-editable install (mscc.pyfront.mindspore_modules was: `import mscc` failed there)."""
import os
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SKIP = {".git", ".venv", "build", "test", "bench", "examples", "shared", "__pycache__"}


def _package_folders():
    found = set()
    for folder, dirs, files in os.walk(ROOT):
        rel = os.path.relpath(folder, ROOT)
        dirs[:] = [d for d in dirs if d not in SKIP and not d.startswith(".")]
        if "__init__.py" in files:
            found.add("mscc" if rel == "." else "mscc." + rel.replace(os.sep, "."))
    return found


def test_pyproject_lists_every_package_folder():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        listed = set(tomllib.load(f)["tool"]["setuptools"]["packages"])
    found = _package_folders()
    assert "mscc.pyfront.mindspore_modules" in found
    assert found <= listed, f"not in pyproject.toml's packages: {sorted(found - listed)}"
