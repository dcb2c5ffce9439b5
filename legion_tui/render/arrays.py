"""The numpy array types the frame buffers are made of (one place for the aliases)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

F64 = npt.NDArray[np.float64]
Idx = npt.NDArray[np.intp]  # indices and small integers
U8 = npt.NDArray[np.uint8]
U32 = npt.NDArray[np.uint32]
Bool = npt.NDArray[np.bool_]
