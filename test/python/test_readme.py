"""README's examples are tested: every ```python block runs, and every `mscc`/`ms-opt` command
in a ```sh block that uses only files of the repository succeeds."""
import os
import re
import shlex
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
README = open(os.path.join(ROOT, "README.md")).read()

PY_BLOCKS = re.findall(r"```python\n(.*?)```", README, re.S)
COMMANDS = [line.split("#")[0].strip()
            for block in re.findall(r"```sh\n(.*?)```", README, re.S)
            for line in block.splitlines()
            if line.strip().startswith(("mscc ", "ms-opt "))]


@pytest.mark.parametrize("code", PY_BLOCKS, ids=[f"python-{i}" for i in range(len(PY_BLOCKS))])
def test_python_examples_run(code):
    exec(compile(code, "README.md", "exec"), {"__name__": "__readme__"})


def _runnable(cmd):
    files = [a for a in shlex.split(cmd)[1:] if re.search(r"\.(py|mlir|npy)$", a)]
    return files and all(os.path.exists(os.path.join(ROOT, f)) for f in files)


@pytest.mark.parametrize("cmd", [c for c in COMMANDS if _runnable(c)])
def test_cli_examples_run(cmd, tmp_path):
    # What a command writes (-o FILE, --dump-dir dumps/) goes to tmp_path, not the checkout.
    argv = []
    for arg in shlex.split(cmd):
        if argv and argv[-1] == "-o":
            arg = str(tmp_path / os.path.basename(arg))
        argv.append(arg.replace("dumps/", str(tmp_path) + "/"))
    subprocess.run(argv, cwd=ROOT, check=True, capture_output=True)


def test_readme_has_examples():
    assert PY_BLOCKS and len([c for c in COMMANDS if _runnable(c)]) >= 5
