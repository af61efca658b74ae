"""sklearn_ssvm: structured SVMs with numba oracles and a scikit-learn API."""
from .estimators import (BCFWStructuredSVM, BMRMStructuredSVM, CRFClassifier, PragamStructuredSVM,
                         PragamSVC, SmoothSSVMClassifier)
from .model_selection import (BCFWStructuredSVMCV, BMRMStructuredSVMCV, GridSearchPath, PathCV,
                              RegularizationPath, SmoothSSVMClassifierCV, cross_validate_path,
                              cross_validated, grid_search_path, regularization_path)
from .structures import (BinarySVM, CandidateSet, ChainCRF, GraphCRF, MulticlassSVM, MultiLabel,
                         grid_graph)

__version__ = "0.1.0.dev0"

__all__ = ["BCFWStructuredSVM", "BCFWStructuredSVMCV", "BMRMStructuredSVM", "BMRMStructuredSVMCV",
           "BinarySVM", "CRFClassifier", "CandidateSet", "ChainCRF", "GraphCRF", "GridSearchPath",
           "MultiLabel", "MulticlassSVM", "PathCV", "PragamStructuredSVM", "PragamSVC", "RegularizationPath",
           "SmoothSSVMClassifier",
           "SmoothSSVMClassifierCV", "cross_validate_path", "cross_validated", "grid_graph",
           "grid_search_path", "regularization_path"]
