from ._problem import Problem
from .base import StructuredModel
from .binary import BinarySVM
from .candidates import CandidateSet
from .chain import ChainCRF
from .graph import BinaryGraphCRF
from .graph_crf import GraphCRF, grid_graph
from .multiclass import MulticlassSVM
from .multilabel import MultiLabel

__all__ = ["BinaryGraphCRF", "BinarySVM", "CandidateSet", "ChainCRF", "GraphCRF", "MultiLabel",
           "MulticlassSVM", "Problem", "StructuredModel", "grid_graph"]
