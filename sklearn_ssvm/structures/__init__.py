from ._problem import Problem
from .base import Structure, StructuredModel
from .binary import BinarySVM
from .candidates import CandidateSet
from .chain import ChainCRF
from .graph import BinaryGraphCRF
from .graph_crf import GraphCRF, grid_graph
from .graph_structure import GraphStructure
from .multiclass import MulticlassSVM
from .multilabel import MultiLabel

__all__ = ["BinaryGraphCRF", "BinarySVM", "CandidateSet", "ChainCRF", "GraphCRF",
           "GraphStructure", "MultiLabel", "MulticlassSVM", "Problem", "Structure",
           "StructuredModel", "grid_graph"]
