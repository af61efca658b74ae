"""A fit on a local dask cluster that loses a worker mid-fit (the cluster tests' shared set-up)."""
import os
import threading
import time


def fit_losing_a_worker(fit, wait=3.0, timeout=180):
    """Run ``fit(client)`` on a fresh 2-worker ``LocalCluster`` in a thread, kill one worker
    after ``wait`` seconds, and return ``{"fit": result}`` or ``{"error": the exception}``."""
    import distributed
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        outcome = {}

        def run():
            try:
                outcome["fit"] = fit(client)
            except Exception as exc:  # the caller checks which
                outcome["error"] = exc
        thread = threading.Thread(target=run)
        thread.start()
        time.sleep(wait)
        assert thread.is_alive(), "the fit ended before the worker could be killed"
        worker = sorted(client.scheduler_info()["workers"])[0]
        try:
            client.run(os._exit, 1, workers=[worker])
        except Exception:  # the worker dies before it answers
            pass
        thread.join(timeout=timeout)
        assert not thread.is_alive()
    return outcome
