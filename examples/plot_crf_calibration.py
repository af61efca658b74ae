"""
Calibrated marginals: a CRF against a temperature-scaled structured SVM
=======================================================================

Trains ``CRFClassifier(ChainCRF())``, the conditional random field (CRFsuite's objective,
L-BFGS), and ``BCFWStructuredSVM(ChainCRF())`` at its defaults on the bundled OCR letters
(folds 2-9), chooses the SVM's temperature on fold 1
(:func:`sklearn_ssvm.inspection.calibrate_temperature`: an SVM's scores are margins, not
log-probabilities), and draws the reliability diagram of each model's per-letter marginals on
fold 0: the accuracy of the most probable letter against its marginal, in 10 bins, with the
expected calibration error (:func:`sklearn_ssvm.metrics.expected_calibration_error`).

    python examples/plot_crf_calibration.py [output.png]
"""
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from sklearn.calibration import calibration_curve  # noqa: E402

from sklearn_ssvm import BCFWStructuredSVM, ChainCRF, CRFClassifier  # noqa: E402
from sklearn_ssvm.datasets import load_ocr_letters  # noqa: E402
from sklearn_ssvm.inspection import calibrate_temperature  # noqa: E402
from sklearn_ssvm.metrics import expected_calibration_error  # noqa: E402

ocr = load_ocr_letters()
parts = {name: np.flatnonzero(np.isin(ocr.folds, folds))
         for name, folds in (("train", range(2, 10)), ("calibrate", [1]), ("test", [0]))}
X = {name: [ocr.data[i] for i in idx] for name, idx in parts.items()}
Y = {name: [ocr.target[i] for i in idx] for name, idx in parts.items()}

crf = CRFClassifier(ChainCRF(), c2=1.0, tol=1e-4, max_iter=300).fit(X["train"], Y["train"])
svm = BCFWStructuredSVM(ChainCRF(), random_state=0).fit(X["train"], Y["train"])
temperature = calibrate_temperature(svm, X["calibrate"], Y["calibrate"])
models = {"CRF (its own marginals)": crf.predict_marginals(X["test"]),
          f"SSVM, temperature {temperature:.3g}":
              svm.predict_marginals(X["test"], temperature=temperature),
          "SSVM, temperature 1": svm.predict_marginals(X["test"])}
truth = [np.searchsorted(crf.classes_, y) for y in Y["test"]]
print(f"CRF: {crf.n_iter_} iterations, certified relative gap "
      f"{crf.duality_gap_ / crf.loss_scale_:.1e}; "
      f"letter accuracy {crf.score(X['test'], Y['test']):.3f}")
print(f"SSVM: letter accuracy {svm.score(X['test'], Y['test']):.3f}")

fig, ax = plt.subplots(figsize=(5.5, 5))
ax.plot([0, 1], [0, 1], color="grey", lw=1, ls="--")
for name, marginals in models.items():
    top = np.concatenate([m.max(axis=1) for m in marginals])
    right = np.concatenate([m.argmax(axis=1) == y for m, y in zip(marginals, truth)])
    accuracy, confidence = calibration_curve(right, top, n_bins=10)
    ece = expected_calibration_error(truth, marginals)
    print(f"{name}: expected calibration error {ece:.4f}")
    ax.plot(confidence, accuracy, marker="o", label=f"{name}: ECE {ece:.3f}")
ax.set_xlabel("marginal of the most probable letter")
ax.set_ylabel("accuracy of that letter")
ax.set_title("reliability on OCR fold 0")
ax.legend(loc="upper left", fontsize=8)
fig.tight_layout()
if len(sys.argv) > 1:
    fig.savefig(sys.argv[1], dpi=100)
