"""sklearn_ssvm: structured SVMs with numba oracles and a scikit-learn API."""
from .estimators import (BCFWStructuredSVM, BMRMStructuredSVM, PragamSVC,
                         SmoothSSVMClassifier)
from .path import (GridSearchPath, PathCV, RegularizationPath, cross_validate_path,
                   grid_search_path, regularization_path)
from .structures import BinarySVM, CandidateSet, ChainCRF, MulticlassSVM, MultiLabel

__version__ = "0.1.0.dev0"

__all__ = ["BCFWStructuredSVM", "BMRMStructuredSVM", "BinarySVM", "CandidateSet", "ChainCRF",
           "GridSearchPath", "MultiLabel", "MulticlassSVM", "PathCV", "PragamSVC",
           "RegularizationPath", "SmoothSSVMClassifier", "cross_validate_path",
           "grid_search_path", "regularization_path"]
