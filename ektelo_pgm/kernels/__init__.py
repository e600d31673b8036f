"""numba kernels of the hot loops, each with a plain numpy reference twin (``*_reference``)."""
from .loss import (identity_loss, identity_loss_reference, predicted_decrease, predicted_decrease_reference, step,
                   step_reference)
from .tree import (assemble, assemble_reference, calibrate, calibrate_reference, exp_shifted, project,
                   project_reference, runs_to_maps)

__all__ = ["assemble", "assemble_reference", "calibrate", "calibrate_reference", "exp_shifted", "identity_loss",
           "identity_loss_reference", "predicted_decrease", "predicted_decrease_reference", "project",
           "project_reference", "runs_to_maps", "step", "step_reference"]
