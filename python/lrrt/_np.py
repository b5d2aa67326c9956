"""numpy on demand: the ctypes core works without it; only the array
conveniences (to_numpy, numpy views, numpy scalars and arrays as kernel
arguments) need it."""
import sys


def numpy(what="this"):
    """The numpy module, imported now; ImportError naming what needed it."""
    try:
        import numpy as np
    except ImportError:
        raise ImportError(f"lrrt: {what} needs numpy, which this Python does not have (apt install python3-numpy, "
                          f"or pip install numpy); lrrt's core (devices, buffers as bytes, kernels with Python "
                          f"numbers) works without it") from None
    return np


def loaded():
    """numpy if it is already imported, else None: an object cannot be a
    numpy array or scalar unless numpy was imported, so type tests need not
    import it."""
    return sys.modules.get("numpy")
