from .base import Problem, StructuredModel
from .binary import BinarySVM
from .candidates import CandidateSet
from .chain import ChainCRF
from .graph import BinaryGraphCRF
from .multiclass import MulticlassSVM
from .multilabel import MultiLabel

__all__ = ["BinaryGraphCRF", "BinarySVM", "CandidateSet", "ChainCRF", "MultiLabel", "MulticlassSVM", "Problem",
           "StructuredModel"]
