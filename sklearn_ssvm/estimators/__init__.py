from .bcfw import BCFWStructuredSVM
from .smooth import SmoothSSVMClassifier

__all__ = ["BCFWStructuredSVM", "SmoothSSVMClassifier"]
