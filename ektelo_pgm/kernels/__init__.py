"""numba kernels of the hot loops, each with a plain numpy reference twin (``*_reference``)."""
import os
import tempfile

try:
    from numba.core import config
except ImportError as why:  # numba is a core requirement: say so rather than fail deep in a kernel module
    raise ImportError(f"ektelo_pgm needs numba (pip install 'numba>=0.58', a core requirement); importing it failed: "
                      f"{why}") from why


def _cache_where_writable() -> None:
    """numba caches a kernel beside its source (``__pycache__``) and refuses to compile it at all
    where it cannot write there or in the user's cache folder (a read-only install without a
    home); in that case the cache goes to the temporary folder.  A ``NUMBA_CACHE_DIR`` set by
    the user is kept."""
    if config.CACHE_DIR:
        return
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "__pycache__")
    try:
        os.makedirs(here, exist_ok=True)
        tempfile.TemporaryFile(dir=here).close()
    except OSError:
        config.CACHE_DIR = os.path.join(tempfile.gettempdir(), f"ektelo_pgm-numba-{os.getuid()}")


_cache_where_writable()

from . import compiling  # noqa: F401  (says so on a terminal when the kernels compile)
from .tree import (LossTerms, ParameterLayout, TreeLayout, Workspace, assemble, assemble_reference, calibrate,
                   calibrate_reference, dot, dot_reference, exp_shifted, identity_loss, identity_loss_reference,
                   log_partition, mirror_descent_loop, predicted_decrease, predicted_decrease_reference, project,
                   project_reference, runs_to_maps, step, step_reference, workspace)

__all__ = ["LossTerms", "ParameterLayout", "TreeLayout", "Workspace", "assemble", "assemble_reference", "calibrate",
           "calibrate_reference", "dot", "dot_reference", "exp_shifted", "identity_loss", "identity_loss_reference",
           "log_partition", "mirror_descent_loop", "predicted_decrease", "predicted_decrease_reference", "project",
           "project_reference", "runs_to_maps", "step", "step_reference", "workspace"]
