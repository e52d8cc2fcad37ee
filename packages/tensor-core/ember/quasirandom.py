"""ember.quasirandom: torch.quasirandom's ``SobolEngine``, low-discrepancy Sobol' sequences.

The points come from SciPy's ``scipy.stats.qmc.Sobol`` (Joe and Kuo's direction numbers for up
to 21201 dimensions, the table torch uses too, so unscrambled sequences are torch's point for
point); SciPy is the extra ``ember-tensor[fft]``. Scrambled sequences are random (Owen
scrambling from the seed) and are not torch's numbers.
"""

from __future__ import annotations

import warnings

import ember

__all__ = ["SobolEngine"]


class SobolEngine:
    """Draws a Sobol' sequence in [0, 1)^dimension: ``draw(n)``, ``draw_base2(m)``,
    ``fast_forward(n)``, ``reset()``, as torch.quasirandom.SobolEngine."""

    MAXBIT = 30
    MAXDIM = 21201

    def __init__(self, dimension, scramble=False, seed=None):
        if not 1 <= dimension <= self.MAXDIM:
            raise ValueError(f"Supported range of dimensionality for SobolEngine is "
                             f"[1, {self.MAXDIM}]")
        try:
            from scipy.stats import qmc
        except ImportError:
            raise ImportError("ember.quasirandom.SobolEngine draws its points with SciPy's "
                              "Sobol' sequences: pip install scipy (or the extra "
                              "ember-tensor[fft])") from None
        self.dimension, self.scramble, self.seed = dimension, scramble, seed
        self._engine = qmc.Sobol(dimension, scramble=scramble, seed=seed, bits=self.MAXBIT)
        self.num_generated = 0

    def draw(self, n=1, out=None, dtype=None):
        """The next ``n`` points, an (n, dimension) tensor of ``dtype`` (the default float
        type), or written into ``out``."""
        with warnings.catch_warnings():  # SciPy's note on n not a power of 2 (torch says none)
            warnings.simplefilter("ignore", UserWarning)
            points = self._engine.random(n)
        self.num_generated += n
        result = ember.tensor(points, dtype=dtype if dtype is not None
                              else ember.get_default_dtype())
        if out is not None:
            out.resize_as_(result).copy_(result)
            return out
        return result

    def draw_base2(self, m, out=None, dtype=None):
        """The next 2**m points; the points drawn so far and these must total a power of 2
        (the balance properties of the sequence)."""
        n = 2 ** m
        total = self.num_generated + n
        if total & (total - 1):
            raise ValueError(
                f"The balance properties of Sobol' points require n to be a power of 2. "
                f"{self.num_generated} points have been previously generated, then: "
                f"n={self.num_generated}+2**{m}={total}. If you still want to do this, please "
                f"use 'SobolEngine.draw()' instead.")
        return self.draw(n, out=out, dtype=dtype)

    def reset(self):
        """Back to the first point."""
        self._engine.reset()
        self.num_generated = 0
        return self

    def fast_forward(self, n):
        """Skips the next ``n`` points."""
        self._engine.fast_forward(n)
        self.num_generated += n
        return self

    def __repr__(self):
        parts = [f"dimension={self.dimension}"]
        if self.scramble:
            parts.append("scramble=True")
        if self.seed is not None:
            parts.append(f"seed={self.seed}")
        return f"SobolEngine({', '.join(parts)})"
