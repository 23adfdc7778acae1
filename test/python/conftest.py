"""Fixtures shared by the test modules."""
import pytest

import mscc as ms


@pytest.fixture(params=[pytest.param(ms.GRAPH_MODE, id="graph"),
                        pytest.param(ms.PYNATIVE_MODE, id="pynative")])
def mode(request):
    """Run the test in GRAPH_MODE and in PYNATIVE_MODE (restored afterwards)."""
    ms.set_context(mode=request.param)
    yield request.param
    ms.set_context(mode=ms.PYNATIVE_MODE)


def pytest_configure(config):
    # Tests compile thousands of small functions: no on-disk executable cache, except where a
    # test turns it on with its own folder (test_exe_cache.py).
    import os
    import sys
    os.environ["MSCC_CACHE_DIR"] = ""
    # Every pass's output verified, as ms-opt does (compiles verify once per stage).
    os.environ["MSCC_VERIFY_EACH"] = "1"
    # The CLI tests run `mscc`/`ms-opt` as commands: use the ones installed next to this
    # interpreter even when its venv is not activated (cmake's check-mscc calls it by path).
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]
