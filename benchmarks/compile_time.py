"""What a first run compiles: every numba kernel, its specialisations and its compile seconds.

    python benchmarks/compile_time.py [--fits bcfw/chain casimir/chain ...] [--repeats 1]
        [--kernels 25]

Each fit (``sklearn_ssvm._compile.FITS``, those ``python -m sklearn_ssvm --compile`` can run)
runs in a fresh process with an empty ``NUMBA_CACHE_DIR`` (a cold first run), on a few small
examples of its structure family, at the estimator's defaults but a few iterations, then
predicts. A
listener on numba's ``"numba:compile"`` events times every compilation of a dispatcher; a
kernel that calls another compiles the callee inside its own compilation, so the table gives
each compilation's own CPU seconds (``time.process_time``, its time less its callees': the
compiler runs on one thread, and a shared machine's load does not count), which add up to the
total. Per
fit: wall seconds of the process's import of the package, of the fit, the seconds spent
compiling, the kernels and specialisations compiled and the files numba's cache holds after the
fit (``.nbi`` indices, ``.nbc`` specialisations), which should equal the specialisations
compiled (a specialisation compiled but not cached is compiled again by every process).

Then the kernels over all the fits, most expensive first: seconds summed over the fits (what
running every fit cold once costs), the specialisations of each and how many fits compile it.
``--repeats``: run each fit's cold process that many times and report medians.

``--demo`` also times ``python -m sklearn_ssvm --quiet`` cold (empty cache) and warm.
``--after-compile`` instead fills an empty cache with ``python -m sklearn_ssvm --compile``, then
runs each fit in a process of its own on it and reports what it still compiled.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict

def child(name):
    """Run in the cold process: import, fit, and print what was compiled as JSON."""
    t = time.perf_counter()
    import numba.core.event as ev
    from sklearn_ssvm._compile import fit  # the package's import, and its compilations if any
    import_s = time.perf_counter() - t

    stack, records = [], []

    class Timer(ev.Listener):
        def on_start(self, event):
            stack.append([time.process_time(), 0.0])

        def on_end(self, event):
            start, inner = stack.pop()
            elapsed = time.process_time() - start
            if stack:
                stack[-1][1] += elapsed
            dispatcher = event.data["dispatcher"]
            py_func = dispatcher.py_func
            records.append({"kernel": f"{py_func.__module__}.{py_func.__qualname__}",
                            "signature": str(tuple(event.data["args"])),
                            "seconds": elapsed - inner})

    t = time.perf_counter()
    with ev.install_listener("numba:compile", Timer()):
        fit(name)
    fit_s = time.perf_counter() - t
    cache = os.environ["NUMBA_CACHE_DIR"]
    files = [f for _, _, fs in os.walk(cache) for f in fs]
    print(json.dumps({"import": import_s, "fit": fit_s, "records": records,
                      "nbi": sum(f.endswith(".nbi") for f in files),
                      "nbc": sum(f.endswith(".nbc") for f in files)}))


def cold(argv, cache=None):
    """Run ``argv`` in a fresh process with the numba cache ``cache`` (None: a new empty one);
    returns (stdout, wall seconds)."""
    if cache is None:
        with tempfile.TemporaryDirectory() as cache:
            return cold(argv, cache)
    env = {**os.environ, "NUMBA_CACHE_DIR": cache}
    t = time.perf_counter()
    out = subprocess.run(argv, env=env, capture_output=True, text=True, check=True).stdout
    return out, time.perf_counter() - t


def after_compile(names):
    """``python -m sklearn_ssvm --compile`` into an empty cache, then each fit of ``names`` in
    a process of its own on that cache: what each still compiles (nothing, when the cache
    serves the common fits)."""
    from sklearn_ssvm._compile import COMMON
    with tempfile.TemporaryDirectory() as cache:
        _, wall = cold([sys.executable, "-m", "sklearn_ssvm", "--compile"], cache)
        print(f"python -m sklearn_ssvm --compile: {wall:.1f} s wall, cold\n")
        print(f"{'fit':18} {'compiled':>8} {'compile s':>9} {'fit s':>6}  (after --compile)")
        for name in names:
            run = json.loads(cold([sys.executable, __file__, "--child", name], cache)[0])
            mark = "" if name in COMMON else "  (not among the common fits)"
            print(f"{name:18} {len(run['records']):8d} "
                  f"{sum(r['seconds'] for r in run['records']):9.2f} {run['fit']:6.2f}{mark}")


def demo(repeats):
    """Cold and warm wall seconds of ``python -m sklearn_ssvm --quiet``."""
    argv = [sys.executable, "-m", "sklearn_ssvm", "--quiet"]
    colds, warms = [], []
    for _ in range(repeats):
        colds.append(cold(argv)[1])
        with tempfile.TemporaryDirectory() as cache:
            env = {**os.environ, "NUMBA_CACHE_DIR": cache}
            subprocess.run(argv, env=env, capture_output=True, check=True)
            t = time.perf_counter()
            subprocess.run(argv, env=env, capture_output=True, check=True)
            warms.append(time.perf_counter() - t)
    print(f"python -m sklearn_ssvm --quiet: cold {statistics.median(colds):.1f} s, "
          f"warm {statistics.median(warms):.1f} s wall (medians of {repeats})\n")


def main():
    if sys.argv[1:2] == ["--child"]:  # the cold process: nothing imported before it is timed
        return child(sys.argv[2])
    from sklearn_ssvm._compile import FITS
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fits", nargs="+", default=FITS, choices=FITS)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--kernels", type=int, default=25, help="rows of the kernel table")
    parser.add_argument("--demo", action="store_true")
    parser.add_argument("--after-compile", action="store_true",
                        help="instead: what each fit compiles after python -m sklearn_ssvm "
                             "--compile filled the cache")
    args = parser.parse_args()
    if args.after_compile:
        return after_compile(args.fits)
    if args.demo:
        demo(args.repeats)

    per_kernel = defaultdict(lambda: {"seconds": 0.0, "signatures": set(), "fits": set()})
    print(f"{'fit':18} {'import s':>8} {'fit s':>7} {'compile s':>9} {'kernels':>7} "
          f"{'specs':>6} {'cached':>6}")
    totals = []
    for name in args.fits:
        runs = [json.loads(cold([sys.executable, __file__, "--child", name])[0])
                for _ in range(args.repeats)]
        med = {key: statistics.median(run[key] for run in runs) for key in ("import", "fit")}
        compile_s = statistics.median(sum(r["seconds"] for r in run["records"]) for run in runs)
        records = runs[0]["records"]
        for record in records:
            entry = per_kernel[record["kernel"]]
            entry["seconds"] += record["seconds"] / args.repeats
            entry["signatures"].add(record["signature"])
            entry["fits"].add(name)
        for run in runs[1:]:
            for record in run["records"]:
                per_kernel[record["kernel"]]["seconds"] += record["seconds"] / args.repeats
        totals.append(compile_s)
        print(f"{name:18} {med['import']:8.2f} {med['fit']:7.2f} {compile_s:9.2f} "
              f"{len({r['kernel'] for r in records}):7d} {len(records):6d} "
              f"{runs[0]['nbc']:6d}", flush=True)
    print(f"\ncompile seconds over the {len(args.fits)} fits: {sum(totals):.1f}\n")
    print(f"{'kernel':64} {'s':>6} {'specs':>5} {'fits':>4}")
    ranked = sorted(per_kernel.items(), key=lambda kv: -kv[1]["seconds"])
    for kernel, entry in ranked[:args.kernels]:
        short = kernel.replace("sklearn_ssvm.", "")
        print(f"{short[:64]:64} {entry['seconds']:6.2f} {len(entry['signatures']):5d} "
              f"{len(entry['fits']):4d}")
    rest = sum(entry["seconds"] for _, entry in ranked[args.kernels:])
    print(f"{'the other ' + str(max(len(ranked) - args.kernels, 0)) + ' kernels':64} {rest:6.2f}")


if __name__ == "__main__":
    main()
