"""numba kernels of the hot loops, each with a plain numpy reference twin (``*_reference``)."""
from . import compiling  # noqa: F401  (says so on a terminal when the kernels compile)
from .tree import (LossTerms, ParameterLayout, TreeLayout, Workspace, assemble, assemble_reference, calibrate,
                   calibrate_reference, dot, dot_reference, exp_shifted, identity_loss, identity_loss_reference,
                   mirror_descent, predicted_decrease, predicted_decrease_reference, project, project_reference,
                   runs_to_maps, step, step_reference, workspace)

__all__ = ["LossTerms", "ParameterLayout", "TreeLayout", "Workspace", "assemble", "assemble_reference", "calibrate",
           "calibrate_reference", "dot", "dot_reference", "exp_shifted", "identity_loss", "identity_loss_reference",
           "mirror_descent", "predicted_decrease", "predicted_decrease_reference", "project", "project_reference",
           "runs_to_maps", "step", "step_reference", "workspace"]
