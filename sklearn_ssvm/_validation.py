"""Parameter validation for our estimators on scikit-learn's public API only (its own
``utils._param_validation`` is private and changes across releases).

Each estimator lists ``_parameter_constraints``: per parameter, the constraints any of which
the value may satisfy, in scikit-learn's vocabulary (``None``, ``"boolean"``,
``"random_state"``, ``"verbose"``, a class, :class:`Interval`, :class:`Options`) or
``"no_validation"``. :func:`check_params` raises :class:`InvalidParameterError` (a ValueError
and a TypeError, as scikit-learn's) with scikit-learn's wording.
"""
from numbers import Integral, Real

import numpy as np


class Protocol:
    """Base of the protocols (penalties, structures): a public method a subclass writes
    without a docstring takes the nearest base's, so each is documented once."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for name, value in vars(cls).items():
            function = getattr(value, "__func__", value)
            if not name.startswith("_") and callable(function) and not function.__doc__:
                function.__doc__ = next((getattr(base, name).__doc__ for base in cls.__mro__[1:]
                                         if getattr(getattr(base, name, None), "__doc__", None)),
                                        None)


class InvalidParameterError(ValueError, TypeError):
    """A constructor parameter with a value outside its constraints."""


class Interval:
    """Finite numbers of ``kind`` (``Integral`` or ``Real``) between ``left`` and ``right``
    (None: no bound), ``closed`` one of ``"left"``, ``"right"``, ``"both"``, ``"neither"``."""

    def __init__(self, kind, left, right, *, closed):
        self.kind, self.left, self.right, self.closed = kind, left, right, closed

    def is_satisfied_by(self, value):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, self.kind):
            return False
        if not np.isfinite(value):  # an unbounded side is open: (0, inf) holds no inf
            return False
        if self.left is not None and (value < self.left or (
                value == self.left and self.closed not in ("left", "both"))):
            return False
        return self.right is None or not (value > self.right or (
            value == self.right and self.closed not in ("right", "both")))

    def __str__(self):
        kind = "an int" if self.kind is Integral else "a float"
        left = "-inf" if self.left is None else self.left
        right = "inf" if self.right is None else self.right
        opening = "[" if self.closed in ("left", "both") and self.left is not None else "("
        closing = "]" if self.closed in ("right", "both") and self.right is not None else ")"
        return f"{kind} in the range {opening}{left}, {right}{closing}"


class Options:
    """One of the strings ``values``."""

    def __init__(self, values):
        self.values = set(values)

    def is_satisfied_by(self, value):
        return isinstance(value, str) and value in self.values

    def __str__(self):
        return f"a str among {sorted(self.values)}"


def _satisfied(constraint, value):
    if constraint is None:
        return value is None
    if constraint == "boolean":
        return isinstance(value, (bool, np.bool_))
    if constraint == "verbose":
        return isinstance(value, (bool, np.bool_)) or (isinstance(value, Integral)
                                                       and value >= 0)
    if constraint == "random_state":
        return (value is None or isinstance(value, np.random.RandomState)
                or (isinstance(value, Integral) and not isinstance(value, (bool, np.bool_))
                    and 0 <= value < 2**32))
    if isinstance(constraint, type):
        return isinstance(value, constraint)
    return constraint.is_satisfied_by(value)


def _describe(constraint):
    if constraint is None:
        return "None"
    if isinstance(constraint, type):
        return f"an instance of {constraint.__name__!r}"
    return {"boolean": "an instance of 'bool'", "verbose": "an int >= 0 or a bool",
            "random_state": "an int in the range [0, 4294967295], a RandomState instance or "
                            "None"}.get(constraint, str(constraint))


def check_params(estimator):
    """Raise :class:`InvalidParameterError` for the first parameter of ``estimator`` that
    satisfies none of its constraints (parameters without constraints are not checked)."""
    for name, value in estimator.get_params(deep=False).items():
        constraints = estimator._parameter_constraints.get(name, "no_validation")
        if constraints == "no_validation":
            continue
        if not any(_satisfied(c, value) for c in constraints):
            allowed = [_describe(c) for c in constraints]
            allowed = (", ".join(allowed[:-1]) + " or " + allowed[-1] if len(allowed) > 1
                       else allowed[0])
            raise InvalidParameterError(f"The {name!r} parameter of {type(estimator).__name__} "
                                        f"must be {allowed}. Got {value!r} instead.")


def check_temperature(temperature):
    """Refuse a marginals' temperature that is not a finite real number ``> 0``."""
    if not (isinstance(temperature, Real) and not isinstance(temperature, bool)
            and np.isfinite(temperature) and temperature > 0):
        raise ValueError(f"temperature must be a finite number > 0, got {temperature!r}.")
