"""Fixtures shared by the test modules."""
