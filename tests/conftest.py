"""Fixtures and hooks shared by the test modules."""


def _fuzz_module(items):
    fuzz = [item for item in items if getattr(item, "originalname", None) == "test_fuzz"]
    return (fuzz[0].module, fuzz) if fuzz else (None, [])


def pytest_collection_finish(session):
    """The bounds-checked fuzz runs compile numba cold for minutes: start them as soon as they
    are selected (``test_fuzz.py``), so they use the second core while the others run."""
    module, fuzz = _fuzz_module(session.items)
    if module is not None:
        module.start_in_background(fuzz)


def pytest_sessionfinish(session):
    """Stop the fuzz runs whose tests did not run (a session stopped early)."""
    module, _ = _fuzz_module(getattr(session, "items", []))
    if module is not None:
        module.stop_unfinished()
