"""``biject_to(constraint)`` and ``transform_to(constraint)``: a transform from unconstrained
real space onto the set a constraint describes (for optimizing constrained parameters in
unconstrained coordinates). ``biject_to`` gives bijections (usable in a
TransformedDistribution); ``transform_to`` may give a cheaper non-injective map (softmax for
the simplex)."""

from __future__ import annotations

import numbers

from ember.distributions import constraints, transforms

__all__ = ["ConstraintRegistry", "biject_to", "transform_to"]


class ConstraintRegistry:
    """A table from constraint types to factories ``factory(constraint) -> Transform``."""

    def __init__(self):
        self._registry: dict = {}
        super().__init__()

    def register(self, constraint, factory=None):
        """Registers ``factory`` for a constraint type (or the type of a constraint instance);
        usable as a decorator."""
        if factory is None:
            return lambda f: self.register(constraint, f)
        if isinstance(constraint, constraints.Constraint):
            constraint = type(constraint)
        if not isinstance(constraint, type) or not issubclass(constraint,
                                                               constraints.Constraint):
            raise TypeError("Expected constraint to be either a Constraint subclass or "
                            f"instance, but got {constraint}")
        self._registry[constraint] = factory
        return factory

    def __call__(self, constraint):
        try:
            factory = self._registry[type(constraint)]
        except KeyError:
            raise NotImplementedError(
                f"Cannot transform {type(constraint).__name__} constraints") from None
        return factory(constraint)


biject_to = ConstraintRegistry()
transform_to = ConstraintRegistry()


def _both(constraint_type, factory):
    biject_to.register(constraint_type, factory)
    transform_to.register(constraint_type, factory)


def _is_zero(bound) -> bool:
    return isinstance(bound, numbers.Number) and bound == 0


_both(constraints._Real, lambda c: transforms.identity_transform)


def _independent(registry):
    def factory(c):
        inner = registry(c.base_constraint)
        return transforms.IndependentTransform(inner, c.reinterpreted_batch_ndims)
    return factory


biject_to.register(constraints._IndependentConstraint, _independent(biject_to))
transform_to.register(constraints._IndependentConstraint, _independent(transform_to))


def _to_lower_bounded(c):
    if _is_zero(c.lower_bound):
        return transforms.ExpTransform()
    return transforms.ComposeTransform([transforms.ExpTransform(),
                                        transforms.AffineTransform(c.lower_bound, 1)])


_both(constraints._GreaterThan, _to_lower_bounded)
_both(constraints._GreaterThanEq, _to_lower_bounded)


def _to_upper_bounded(c):
    return transforms.ComposeTransform([transforms.ExpTransform(),
                                        transforms.AffineTransform(c.upper_bound, -1)])


_both(constraints._LessThan, _to_upper_bounded)


def _to_interval(c):
    lower, upper = c.lower_bound, c.upper_bound
    if _is_zero(lower) and isinstance(upper, numbers.Number) and upper == 1:
        return transforms.SigmoidTransform()
    return transforms.ComposeTransform([transforms.SigmoidTransform(),
                                        transforms.AffineTransform(lower, upper - lower)])


_both(constraints._Interval, _to_interval)
_both(constraints._HalfOpenInterval, _to_interval)

biject_to.register(constraints._Simplex, lambda c: transforms.StickBreakingTransform())
transform_to.register(constraints._Simplex, lambda c: transforms.SoftmaxTransform())
# not bijections (they ignore the input's strict upper triangle): transform_to only, as torch
_both(constraints._CorrCholesky, lambda c: transforms.CorrCholeskyTransform())


def _per_part(registry):
    """Factories for cat / stack constraints: the registry's transform for each part."""
    def cat(c):
        return transforms.CatTransform([registry(part) for part in c.cseq], c.dim, c.lengths)

    def stack(c):
        return transforms.StackTransform([registry(part) for part in c.cseq], c.dim)
    return cat, stack


for _registry in (biject_to, transform_to):
    _cat, _stack = _per_part(_registry)
    _registry.register(constraints._Cat, _cat)
    _registry.register(constraints._Stack, _stack)

transform_to.register(constraints._LowerCholesky, lambda c: transforms.LowerCholeskyTransform())
transform_to.register(constraints._PositiveDefinite,
                      lambda c: transforms.PositiveDefiniteTransform())

