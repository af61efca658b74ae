from .bcfw import BCFWStructuredSVM
from .bmrm import BMRMStructuredSVM
from .pragam import PragamSVC
from .smooth import SmoothSSVMClassifier

__all__ = ["BCFWStructuredSVM", "BMRMStructuredSVM", "PragamSVC", "SmoothSSVMClassifier"]
