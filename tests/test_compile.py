"""``python -m sklearn_ssvm --compile``: the common fits run, on small data, and say where their
kernels are kept; a fit it does not know is refused by name. The demo itself, in two passes."""
import re

import pytest

from sklearn_ssvm.__main__ import main
from sklearn_ssvm import BinarySVM, CandidateSet, ChainCRF, GraphCRF, MulticlassSVM, MultiLabel
from sklearn_ssvm._compile import COMMON, FITS, fit, small_data


def test_compile_runs_the_named_fits_and_says_where_the_cache_is(capsys):
    main(["--compile", "bcfw/binary", "pragam/binary"])
    out = capsys.readouterr().out
    assert "compiling into" in out or "no writable cache" in out
    assert "bcfw/binary" in out and "pragam/binary" in out and "bcfw/chain" not in out


def test_every_fit_is_known_and_the_common_ones_are_among_them():
    assert set(COMMON) <= set(FITS)
    with pytest.raises(ValueError, match="unknown fit 'svm/chain'"):
        fit("svm/chain")
    with pytest.raises(SystemExit):
        main(["--compile", "svm/chain"])



def test_every_family_s_small_data_is_valid_for_its_structure():
    structures = {"chain": ChainCRF, "multiclass": MulticlassSVM, "binary": BinarySVM,
                  "multilabel": MultiLabel, "candidates": CandidateSet, "graph": GraphCRF}
    families = {name.split("/")[1] for name in FITS} - {"grid"}
    assert families <= set(structures)
    for family in families:
        problem = structures[family]().prepare(*small_data(family))
        assert problem.n_samples == len(small_data(family)[0])


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_the_demo_says_why_its_words_lack_their_first_letter(capsys):
    """The OCR words are printed as the data set has them, without their first, capital
    letter, and the demo says so (issue 49): truth and prediction have the same length."""
    main(["--quiet", "--max-iter", "2"])
    out = capsys.readouterr().out
    assert "drops each word's first, capital letter" in out
    pairs = re.findall(r"^ +([a-z]+) -> ([a-z]+)$", out, flags=re.MULTILINE)
    assert len(pairs) == 8 and all(len(truth) == len(pred) for truth, pred in pairs)
