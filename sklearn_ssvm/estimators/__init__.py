from .bcfw import BCFWStructuredSVM
from .bmrm import BMRMStructuredSVM
from .crf import CRFClassifier
from .pragam import PragamStructuredSVM, PragamSVC
from .smooth import SmoothSSVMClassifier

__all__ = ["BCFWStructuredSVM", "BMRMStructuredSVM", "CRFClassifier", "PragamStructuredSVM",
           "PragamSVC", "SmoothSSVMClassifier"]
