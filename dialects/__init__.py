"""The ms dialect: IRDL structure (ms.irdl.mlir) plus the Python op registry (ops/).

Submodules are imported explicitly; `dtypes` and `registry` do not import mlir.
"""
