"""The elementwise gradient tables under their former import path; they are part of the op
declarations now (`lazyt.ops.elementwise`)."""
from ..ops.elementwise import BINARY_GRAD, UNARY_GRAD  # noqa: F401
