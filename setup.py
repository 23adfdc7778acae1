"""The C part of the package: the cache-hit call of jit functions and CPU executables
(runtime/_fastcall.c and jit_call.h, against numpy's C API). Optional: where it cannot be
built, the runtime calls through ctypes (runtime/fastcall.py) and JitFunction's call is all
Python. Everything else is in pyproject.toml."""
import numpy
from setuptools import Extension, setup

setup(ext_modules=[Extension("mscc.runtime._fastcall", ["runtime/_fastcall.c"],
                             depends=["runtime/jit_call.h"],
                             include_dirs=[numpy.get_include()], optional=True,
                             extra_compile_args=["-O2"])])
