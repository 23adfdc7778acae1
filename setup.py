"""The C part of the package: the cache-hit call of jit functions and CPU executables
(runtime/_fastcall.c and jit_call.h, against numpy's C API), and the passes' op searches
(dialects/_walk.c) and functions' structure (dialects/_structure.c), against MLIR's C API
found at run time, and the quick tier's matrix products (runtime/_quick_kernels.c: the
tiered compiles of passes/tiering.py). Optional: where they cannot be built, the runtime
calls through ctypes (runtime/fastcall.py), JitFunction's call is all Python, the searches
walk in Python and jit compiles are not tiered. Everything else is in pyproject.toml."""
import numpy
from setuptools import Extension, setup

setup(ext_modules=[Extension("mscc.runtime._fastcall", ["runtime/_fastcall.c"],
                             depends=["runtime/jit_call.h"],
                             include_dirs=[numpy.get_include()], optional=True,
                             extra_compile_args=["-O2"]),
                   Extension("mscc.dialects._walk", ["dialects/_walk.c"], optional=True,
                             extra_compile_args=["-O2"]),
                   Extension("mscc.dialects._structure", ["dialects/_structure.c"],
                             optional=True, extra_compile_args=["-O2"]),
                   Extension("mscc.runtime._quick_kernels", ["runtime/_quick_kernels.c"],
                             optional=True, extra_compile_args=["-O3"])])
