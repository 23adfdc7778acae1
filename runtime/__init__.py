"""Running compiled code: in-process CPU executables (cpu.py, needs MLIR), and executable
artifacts (.msx, artifact.py) for the CPU (cpu_aot.py) and CUDA (cuda.py), which need only
numpy (and cuda-bindings). Importing this package imports no MLIR.

    exe = mscc.runtime.load("model.msx")   # validates the manifest
    outputs = exe(x, w)                    # CPU: numpy arrays; CUDA: DeviceArrays
"""


def load(path: str, **options):
    """The callable in an .msx artifact. Raises ArtifactError for a file this runtime cannot
    run (wrong format version, missing kernel, ...)."""
    from .artifact import read
    return read(path).load(**options)
