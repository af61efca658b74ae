"""Loaders for the bundled and the shared benchmark data sets."""

import os
from importlib import resources
from pathlib import Path

import numpy as np
from sklearn.utils import Bunch

__all__ = ["load_ocr_letters", "load_scene", "split_folds"]

_OCR_FILE = "ocr_letters.npz"
_OCR_N_PIXELS = 128  # 16 x 8 binary image, row-major
_SCENE_FILE = "scene_multilabel.npz"


def _data_file(name):
    """Return a traversable for ``data/<name>`` inside this package."""
    return resources.files(__package__).joinpath("data", name)


def _read_descr(name):
    return resources.files(__package__).joinpath("descr", name).read_text(encoding="utf-8")


def load_ocr_letters(*, return_X_y=False):
    """Load the OCR handwritten letters data set (chain labelling).

    6,877 handwritten words (52,152 letters), each letter a 16 x 8 binary image, labelled with
    one of 26 lowercase letters and assigned to one of 10 cross-validation folds. The data ship
    with the package: no download.

    Read more in the ``DESCR`` attribute of the returned bunch.

    ===================  ==============================
    Words (sequences)    6,877
    Letters (tokens)     52,152
    Features per letter  128 binary pixels (16 x 8)
    Classes              26 ('a' .. 'z')
    Folds                10 (0 .. 9)
    ===================  ==============================

    Parameters
    ----------
    return_X_y : bool, default=False
        If True, return ``(data, target)`` instead of a Bunch.

    Returns
    -------
    data : sklearn.utils.Bunch
        Dictionary-like object with attributes:

        data : list of ndarray of shape (n_letters, 128), dtype float64
            One array per word; pixel values are 0.0 or 1.0, each row is a letter image
            flattened in row-major order (16 rows of 8 pixels).
        target : list of ndarray of shape (n_letters,), dtype int64
            Letter indices 0..25 of each word.
        folds : ndarray of shape (6877,), dtype int64
            Fold (0..9) of each word.
        words : ndarray of shape (6877,), dtype str
            The words as strings.
        target_names : list of str
            ``['a', ..., 'z']``.
        DESCR : str
            Description of the data set, its splits and its sources.

    (data, target) : tuple if ``return_X_y`` is True
        The lists ``data`` and ``target`` described above, returned instead of the bunch.

    Notes
    -----
    The usual splits are "OCR-large" (train on the 9 folds ``folds != 0``, 6,251 words, test on
    fold 0) and "OCR-small" (train on fold 0, 626 words, test on the others).

    References
    ----------
    .. [1] B. Taskar, C. Guestrin and D. Koller, "Max-Margin Markov Networks", Advances in
       Neural Information Processing Systems 16 (NIPS), 2003.

    Examples
    --------
    >>> from sklearn_ssvm.datasets import load_ocr_letters
    >>> ocr = load_ocr_letters()
    >>> len(ocr.data), ocr.data[0].shape[1]
    (6877, 128)
    >>> train = [x for x, f in zip(ocr.data, ocr.folds) if f != 0]
    >>> len(train)
    6251
    """
    with _data_file(_OCR_FILE).open("rb") as fh, np.load(fh, allow_pickle=False) as npz:
        packed = npz["pixels"]
        labels = npz["labels"].astype(np.int64)
        lengths = npz["lengths"].astype(np.int64)
        folds = npz["folds"].astype(np.int64)
        words_bytes = npz["words"].tobytes()

    pixels = np.unpackbits(packed, axis=1)[:, :_OCR_N_PIXELS].astype(np.float64)
    bounds = np.cumsum(lengths)[:-1]
    data = np.split(pixels, bounds)
    target = np.split(labels, bounds)
    if return_X_y:
        return data, target

    words = np.array(words_bytes.decode("ascii").split(" "))
    return Bunch(data=data, target=target, folds=folds, words=words,
                 target_names=[chr(ord("a") + k) for k in range(26)],
                 DESCR=_read_descr("ocr_letters.rst"))


def split_folds(dataset, test_fold=0):
    """Split a data set with ``folds`` into training and test lists by fold.

    The folds are those of Taskar, Guestrin & Koller (2003).

    The four lists are returned in the order of :func:`sklearn.model_selection.train_test_split`.

    Parameters
    ----------
    dataset : Bunch
        With ``data``, ``target`` (lists, one entry per example) and ``folds``.
    test_fold : int, default=0
        The fold held out. ``test_fold=0`` on the OCR letters gives "OCR-large" (6,251
        training words, 626 test words).

    Returns
    -------
    X_train : list
        The entries of ``dataset.data`` not in ``test_fold``, in their order.
    X_test : list
        The entries of ``dataset.data`` in ``test_fold``.
    Y_train : list
        The entries of ``dataset.target`` not in ``test_fold``.
    Y_test : list
        The entries of ``dataset.target`` in ``test_fold``.

    Raises
    ------
    ValueError
        If no example is in ``test_fold``.
    """
    test = np.asarray(dataset.folds) == test_fold
    if not test.any():
        raise ValueError(f"No example is in fold {test_fold}.")

    def pick(seq, mask):
        return [item for item, keep in zip(seq, mask) if keep]

    return (pick(dataset.data, ~test), pick(dataset.data, test), pick(dataset.target, ~test),
            pick(dataset.target, test))


def load_scene(path=None):
    """Load the scene multi-label classification data set.

    1,211 training and 1,196 test images described by 294 colour and texture features, each
    tagged with a subset of 6 scene labels (beach, sunset, fall foliage, field, mountain, urban)
    [1]_. The file is not bundled with the package (4.7 MB); pass its path.

    Parameters
    ----------
    path : path-like, default=None
        A ``.npz`` file holding ``X_train``, ``y_train``, ``X_test`` and ``y_test`` (the format
        of ``shared/datasets/scene_multilabel.npz``). If None, a copy in the package's ``data``
        directory is used when present; otherwise :class:`FileNotFoundError` is raised.

    Returns
    -------
    X_train : ndarray of shape (n_train, n_features), dtype float64
        Features of the training images.
    Y_train : ndarray of shape (n_train, n_labels), dtype int64
        0/1 label indicator matrix.
    X_test : ndarray of shape (n_test, n_features), dtype float64
        Features of the test images.
    Y_test : ndarray of shape (n_test, n_labels), dtype int64
        0/1 label indicator matrix.

    References
    ----------
    .. [1] M. R. Boutell, J. Luo, X. Shen and C. M. Brown, "Learning multi-label scene
       classification", Pattern Recognition 37(9), 2004.
    """
    if path is None:
        bundled = _data_file(_SCENE_FILE)
        if not bundled.is_file():
            raise FileNotFoundError("The scene data set is not bundled with sklearn_ssvm; pass the "
                                    "path of scene_multilabel.npz, e.g. load_scene('shared/"
                                    "datasets/scene_multilabel.npz').")
        with bundled.open("rb") as fh:
            return _read_scene(fh)
    path = Path(os.fspath(path))
    if not path.is_file():
        raise FileNotFoundError("No such file: %r" % str(path))
    return _read_scene(path)


def _read_scene(source):
    with np.load(source, allow_pickle=False) as npz:
        missing = {"X_train", "y_train", "X_test", "y_test"}.difference(npz.files)
        if missing:
            raise ValueError("scene file lacks the arrays %s" % sorted(missing))
        X_train = np.asarray(npz["X_train"], dtype=np.float64)
        Y_train = np.asarray(npz["y_train"], dtype=np.int64)
        X_test = np.asarray(npz["X_test"], dtype=np.float64)
        Y_test = np.asarray(npz["y_test"], dtype=np.int64)
    if X_train.ndim != 2 or X_test.ndim != 2 or X_train.shape[1] != X_test.shape[1]:
        raise ValueError("X_train and X_test must be 2-D with the same number of columns")
    if Y_train.shape != (X_train.shape[0], Y_test.shape[1]) or Y_test.shape[0] != X_test.shape[0]:
        raise ValueError("label matrices do not match the feature matrices")
    return X_train, Y_train, X_test, Y_test


def get_data_home(data_home=None):
    """The folder of the data sets that are not bundled (CoNLL-2000, CoNLL-2003, ...).

    Parameters
    ----------
    data_home : path-like or None, default=None
        Returned as a path when given. None: the ``SKLEARN_SSVM_DATA`` environment variable
        if set, else ``~/sklearn_ssvm_data``.

    Returns
    -------
    pathlib.Path
        The folder (not created): the examples look for ``conll2000/train.txt.gz``,
        ``conll2003/eng.train.gz`` and so on under it.
    """
    if data_home is None:
        data_home = os.environ.get("SKLEARN_SSVM_DATA", Path.home() / "sklearn_ssvm_data")
    return Path(data_home).expanduser()
