from .bcfw import BCFWStructuredSVM

__all__ = ["BCFWStructuredSVM"]
