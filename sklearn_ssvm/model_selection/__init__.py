"""Model selection over the estimators: regularization paths (the certified eps-path of spec
002 and grid paths) and the cross-validated estimators."""
from ._cv import BCFWStructuredSVMCV, BMRMStructuredSVMCV, SmoothSSVMClassifierCV, cross_validated
from ._grid import GridSearchPath, grid_search_path
from ._path import PathCV, RegularizationPath, cross_validate_path, regularization_path

__all__ = ["BCFWStructuredSVMCV", "BMRMStructuredSVMCV", "GridSearchPath", "PathCV",
           "RegularizationPath", "SmoothSSVMClassifierCV", "cross_validate_path",
           "cross_validated", "grid_search_path", "regularization_path"]
