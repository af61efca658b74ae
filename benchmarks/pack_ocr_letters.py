"""Regenerate the bundled OCR letters file, ``sklearn_ssvm/datasets/data/ocr_letters.npz``.

    python benchmarks/pack_ocr_letters.py SOURCE [DESTINATION]

Converts the distribution file (arrays ``pixels``, ``labels``, ``offsets``, ``folds``,
``words``; see ``shared/datasets/README.md``) into the file shipped with the package, which
:func:`sklearn_ssvm.datasets.load_ocr_letters` reads. Pixels stay bit-packed, word offsets are
stored as word lengths and the words as one space separated ASCII byte string, all compressed
with :func:`numpy.savez_compressed`. ``tests/test_datasets.py`` checks that repacking the
shared source reproduces the bundled arrays.
"""
import sys
from pathlib import Path

import numpy as np

BUNDLED = Path(__file__).resolve().parents[1] / "sklearn_ssvm" / "datasets" / "data" / \
    "ocr_letters.npz"


def pack_ocr_letters(source, destination):
    """Write the compact bundled copy of the OCR letters data set.

    Parameters
    ----------
    source : path-like
        The distribution ``ocr_letters.npz``.
    destination : path-like or file-like
        Where to write the bundled file.
    """
    with np.load(source, allow_pickle=False) as src:
        pixels = np.ascontiguousarray(src["pixels"], dtype=np.uint8)
        labels = np.asarray(src["labels"], dtype=np.int8)
        offsets = np.asarray(src["offsets"], dtype=np.int64)
        folds = np.asarray(src["folds"], dtype=np.int8)
        words = [str(w) for w in src["words"]]
    lengths = np.diff(offsets)
    if offsets[0] != 0 or offsets[-1] != len(labels) or lengths.min() < 1:
        raise ValueError("inconsistent offsets in %r" % (source,))
    if lengths.max() > 255:
        raise ValueError("words longer than 255 letters cannot be stored")
    if not (len(words) == len(folds) == len(lengths)):
        raise ValueError("words, folds and offsets disagree on the number of words")
    if any(not w.isascii() or " " in w for w in words):
        raise ValueError("words must be ASCII without spaces")
    words_bytes = np.frombuffer(" ".join(words).encode("ascii"), dtype=np.uint8)
    np.savez_compressed(destination, pixels=pixels, labels=labels,
                        lengths=lengths.astype(np.uint8), folds=folds, words=words_bytes)


if __name__ == "__main__":
    if not 2 <= len(sys.argv) <= 3:
        sys.exit(__doc__)
    pack_ocr_letters(sys.argv[1], sys.argv[2] if len(sys.argv) == 3 else BUNDLED)
