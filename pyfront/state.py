"""Which traces are being built (innermost last). A plain list, read on every jit call: the
cache-hit path cannot afford a thread-local lookup, and tracing is single-threaded."""
active_traces: list = []
# Tapes recording eager ops for PyNative gradients (pyfront/pynative.py), innermost last.
active_tapes: list = []
