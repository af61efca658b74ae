"""End to end on the bundled OCR letters (the acceptance run of the foundation issue)."""
import numpy as np

from sklearn_ssvm import BCFWStructuredSVM, ChainCRF
from sklearn_ssvm.datasets import load_ocr_letters, split_folds


def test_ocr_large_reaches_certified_gap_and_test_error():
    X, X_test, Y, Y_test = split_folds(load_ocr_letters(), test_fold=0)
    assert len(X) == 6251 and len(X_test) == 626
    est = BCFWStructuredSVM(ChainCRF(), alpha=0.01, tol=0.01, random_state=0).fit(X, Y)
    assert est.converged_ and est.duality_gap_ < 0.01
    # the certificate is consistent with an independent evaluation of the primal
    assert abs(est.primal_objective(X, Y) - est.primal_objective_) < 1e-9
    error = 1 - est.score(X_test, Y_test)
    assert 0.08 < error < 0.16
    assert np.isclose(est.duality_gap_, est.primal_objective_ - est.dual_objective_)
