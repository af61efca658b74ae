"""Streaming CoNLL-2000 through ``partial_fit`` against the in-memory SGD fit, one script.

    python benchmarks/streaming_sgd.py [--chunk 1000] [--passes 5] [--alpha 1e-4]
        [--data ../shared/datasets/conll2000]

Both see the CRFsuite template features hashed into 2^18 columns by ``SequenceVectorizer
(hashing=True)`` (no vocabulary to fit, so chunks vectorise independently) and train
``SmoothSSVMClassifier(ChainCRF(labels=tags), solver="sgd")`` with the same ``alpha`` and
learning rate: in memory, ``fit`` with ``--passes`` epochs (examples drawn at random, no early
stopping); streamed, ``--passes`` passes over the training file in chunks of ``--chunk``
sentences, each chunk vectorised, given to ``partial_fit`` and dropped. Reports the test chunk F1,
the fit's CPU seconds and the largest feature matrix held at once.
"""
import argparse
import time
from pathlib import Path

from sklearn_ssvm import ChainCRF, SmoothSSVMClassifier
from sklearn_ssvm.datasets import read_conll
from sklearn_ssvm.feature_extraction import SequenceVectorizer, chunking_token_features
from sklearn_ssvm.metrics import chunk_f1_score

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "conll2000"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--chunk", type=int, default=1000)
    parser.add_argument("--passes", type=int, default=5)
    parser.add_argument("--alpha", type=float, default=1e-4)
    args = parser.parse_args()
    train = read_conll(args.data / "train.txt.gz")
    test = read_conll(args.data / "test.txt.gz")
    tags = sorted({tok[2] for s in train for tok in s})
    vec = SequenceVectorizer(hashing=True, n_features=2**18)

    def vectorise(sentences):
        return (vec.fit_transform([chunking_token_features(s) for s in sentences]),
                [[tok[2] for tok in s] for s in sentences])

    X_test, Y_test = vectorise(test)
    X_train, Y_train = vectorise(train)
    memory = SmoothSSVMClassifier(ChainCRF(labels=tags), solver="sgd", alpha=args.alpha,
                                  max_iter=args.passes, early_stopping=False, random_state=0)
    cpu = time.process_time()
    memory.fit(X_train, Y_train)
    memory_cpu = time.process_time() - cpu
    memory_nnz = sum(x.nnz for x in X_train)
    del X_train, Y_train

    stream = SmoothSSVMClassifier(ChainCRF(labels=tags), solver="sgd", alpha=args.alpha,
                                  learning_rate=memory.learning_rate_, random_state=0)
    cpu, largest = time.process_time(), 0
    for _ in range(args.passes):
        for start in range(0, len(train), args.chunk):
            X, Y = vectorise(train[start:start + args.chunk])
            largest = max(largest, sum(x.nnz for x in X))
            stream.partial_fit(X, Y)
    stream_cpu = time.process_time() - cpu  # feature extraction of every chunk included
    print(f"CoNLL-2000, {len(train)} training sentences, {args.passes} passes, "
          f"alpha={args.alpha:g}, learning rate {memory.learning_rate_:.3g}")
    print("| fit | test chunk F1 | CPU s | feature non-zeros held at once |")
    print("|---|---|---|---|")
    print(f"| in memory (fit) | {100 * chunk_f1_score(Y_test, memory.predict(X_test)):.2f} "
          f"| {memory_cpu:.1f} | {memory_nnz:,} |")
    print(f"| streamed, chunks of {args.chunk} (partial_fit, features included) | "
          f"{100 * chunk_f1_score(Y_test, stream.predict(X_test)):.2f} | {stream_cpu:.1f} "
          f"| {largest:,} |")


if __name__ == "__main__":
    main()
