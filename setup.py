"""The C part of the package: the cache-hit call of CPU executables (runtime/_fastcall.c,
against numpy's C API). Optional: where it cannot be built, the runtime calls through ctypes
(runtime/fastcall.py). Everything else is in pyproject.toml."""
import numpy
from setuptools import Extension, setup

setup(ext_modules=[Extension("mscc.runtime._fastcall", ["runtime/_fastcall.c"],
                             include_dirs=[numpy.get_include()], optional=True,
                             extra_compile_args=["-O2"])])
