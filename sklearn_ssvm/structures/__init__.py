from .base import Problem, StructuredModel
from .binary import BinarySVM
from .chain import ChainCRF
from .multiclass import MulticlassSVM
from .multilabel import MultiLabel

__all__ = ["BinarySVM", "ChainCRF", "MultiLabel", "MulticlassSVM", "Problem", "StructuredModel"]
