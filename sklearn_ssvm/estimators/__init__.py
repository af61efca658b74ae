from .bcfw import BCFWStructuredSVM
from .pragam import PragamSVC
from .smooth import SmoothSSVMClassifier

__all__ = ["BCFWStructuredSVM", "PragamSVC", "SmoothSSVMClassifier"]
