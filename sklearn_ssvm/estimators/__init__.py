from .bcfw import BCFWStructuredSVM
from .bmrm import BMRMStructuredSVM
from .pragam import PragamStructuredSVM, PragamSVC
from .smooth import SmoothSSVMClassifier

__all__ = ["BCFWStructuredSVM", "BMRMStructuredSVM", "PragamStructuredSVM", "PragamSVC",
           "SmoothSSVMClassifier"]
