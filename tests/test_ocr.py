"""End to end on the bundled OCR letters (the acceptance run of the foundation issue, and of
the defaults)."""
import numpy as np
import pytest

from sklearn_ssvm import BCFWStructuredSVM, ChainCRF
from sklearn_ssvm.datasets import load_ocr_letters, split_folds


@pytest.mark.parametrize("make, largest_error", [
    # every default: the count loss, pairwise steps, alpha=None, relative tol
    (lambda: BCFWStructuredSVM(ChainCRF(), random_state=0), 0.125),
    # the defaults before 0.1, one argument each away
    (lambda: BCFWStructuredSVM(ChainCRF(normalize_loss=True), alpha=0.01, step="fw", tol=0.01,
                               random_state=0), 0.16)])
def test_ocr_large_reaches_certified_gap_and_test_error(make, largest_error):
    X, X_test, Y, Y_test = split_folds(load_ocr_letters(), test_fold=0)
    assert len(X) == 6251 and len(X_test) == 626
    est = make().fit(X, Y)
    assert est.converged_ and est.duality_gap_ < est.tol * est.loss_scale_
    # the certificate is consistent with an independent evaluation of the primal
    assert abs(est.primal_objective(X, Y) - est.primal_objective_) < 1e-9
    error = 1 - est.score(X_test, Y_test)
    assert 0.08 < error <= largest_error
    assert np.isclose(est.duality_gap_, est.primal_objective_ - est.dual_objective_)
