"""ember.backends: settings and facts of the backends, under torch.backends' names.

The settings programs write (``cudnn.benchmark = True``, ``cuda.matmul.allow_tf32 = False``, ...)
are accepted and read back; each module says what its flags change in ember (mostly nothing:
ember has one algorithm per op and no cuDNN, oneDNN, MKL or OpenMP). The facts are true of this
build: ``cpu.get_cpu_capability()`` is the instruction set the run-time CPU dispatch picked,
``cuda.is_built()`` is True (one build serves machines with and without a GPU), ``mps`` is
never available.
"""

from ember.backends import cpu, cuda, cudnn, mkl, mkldnn, mps, openmp, opt_einsum  # noqa: F401

__all__ = ["cpu", "cuda", "cudnn", "mkl", "mkldnn", "mps", "openmp", "opt_einsum"]
