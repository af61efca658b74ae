"""Data sets: the bundled OCR letters, loaders for shared files, synthetic generators.

- :func:`load_ocr_letters` -- handwritten words, bundled with the package;
  :func:`split_folds` splits it by fold.
- :func:`load_scene` -- multi-label scene classification, read from a given file.
- :func:`get_data_home` -- where the data sets that are not bundled live.
- :func:`read_conll` -- CoNLL column files (e.g. CoNLL-2000 chunking), plain or gzip;
  :func:`load_conll2000_chunking` -- CoNLL-2000 with its token features, from a directory.
- :func:`make_chain_data` -- a synthetic sequence labelling problem.
- :func:`make_hadamard_bmrm` -- the affine pieces of the worst-case risk for bundle methods.
- :func:`make_snakes` -- grid images of snakes whose segments only pairwise terms can number
  (for ``GraphCRF``).
- :func:`make_segmentation` -- noisy images or superpixel graphs of regions, at any size (for
  ``GraphCRF``).
"""

from ._base import get_data_home, load_ocr_letters, load_scene, split_folds
from ._conll import load_conll2000_chunking, read_conll
from ._samples_generator import (make_chain_data, make_hadamard_bmrm, make_segmentation,
                                 make_snakes)

__all__ = ["get_data_home", "load_conll2000_chunking", "load_ocr_letters", "load_scene",
           "read_conll", "make_chain_data", "make_hadamard_bmrm", "make_segmentation",
           "make_snakes", "split_folds"]
