"""numba kernels of the hot loops, each with a plain numpy reference twin (``*_reference``)."""
from .loss import (identity_loss, identity_loss_reference, predicted_decrease, predicted_decrease_reference, step,
                   step_reference)
from .tree import (assemble, assemble_reference, assemble_runs, assemble_runs_reference, calibrate,
                   calibrate_reference, project, project_reference, project_runs, project_runs_reference)

__all__ = ["assemble", "assemble_reference", "assemble_runs", "assemble_runs_reference", "calibrate", "calibrate_reference", "identity_loss",
           "identity_loss_reference", "predicted_decrease", "predicted_decrease_reference", "project",
           "project_reference", "project_runs", "project_runs_reference", "step", "step_reference"]
