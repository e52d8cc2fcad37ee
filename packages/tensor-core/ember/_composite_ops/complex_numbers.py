"""Complex numbers. real/imag are views (of view_as_real's (real, imaginary) pairs), so writes
through them reach the tensor, as torch's. conj writes the conjugate out: ember has no lazy
conjugate bit, so is_conj is always False and resolve_conj has nothing to resolve."""

from __future__ import annotations

from ember import _C, _shape
from ember._composite_ops._common import _finish_same_dtype


def conj(input):
    return _C.conj_physical(input) if input.dtype.is_complex else input


def resolve_conj(input):
    return input


def real(input):
    return _C.view_as_real(input)[..., 0] if input.dtype.is_complex else input


def imag(input):
    if not input.dtype.is_complex:
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return _C.view_as_real(input)[..., 1]


def isreal(input):
    if input.dtype.is_complex:
        return _C.eq(imag(input), 0)
    return _C.ones_like(input, dtype=_C.bool)


def is_complex(input) -> bool:
    return input.dtype.is_complex


def _check_complex_parts(name, a, b, first, second):
    if a.dtype != b.dtype:
        raise RuntimeError(f"Expected object of scalar type {a.dtype._torch_name} but got scalar "
                           f"type {b.dtype._torch_name} for second argument")
    if a.dtype == _C.float16:  # (torch's complex() makes a complex32; its polar kernel has none)
        if name == "polar":
            raise NotImplementedError("\"polar_cpu\" not implemented for 'Half'")
        raise RuntimeError(f"{name}: float16 parts would make a complex32 (ComplexHalf) tensor, "
                           f"a dtype ember does not have; convert them to float32 first")
    if a.dtype not in (_C.float32, _C.float64):
        raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got "
                           f"{a.dtype._torch_name} and {b.dtype._torch_name}")


def _complex_out(parts, out):
    """The complex tensor of (real, imaginary) pairs stacked on a last dim, written to `out`."""
    result = _C.view_as_complex(_shape.stack(parts, -1))
    if out is None:
        return result
    if not out.dtype.is_complex:
        raise RuntimeError(f"Expected object of scalar type {result.dtype._torch_name} but got "
                           f"scalar type {out.dtype._torch_name} for argument 'out'")
    out.resize_(result.shape).copy_(result)
    return out


def complex(real, imag, *, out=None):  # noqa: A001 - torch's name
    """The complex tensor real + imag * 1j (torch.complex): both float32 or both float64."""
    _check_complex_parts("complex", real, imag, "real", "imag")
    real, imag = _shape.broadcast_tensors(real, imag)
    return _complex_out([real, imag], out)


def polar(abs, angle, *, out=None):  # noqa: A002 - torch's names
    """abs * (cos(angle) + sin(angle) * 1j) (torch.polar)."""
    _check_complex_parts("polar", abs, angle, "abs", "angle")
    return _complex_out([abs * _C.cos(angle), abs * _C.sin(angle)], out)


def sgn(input, *, out=None):
    """sign for real tensors; x / |x| (0 at 0) for complex ones."""
    if not input.dtype.is_complex:
        return _C.sign(input, out=out)
    magnitude = _C.abs(input)
    result = _C.where(magnitude == 0, _C.zeros_like(input), input / magnitude)
    return _finish_same_dtype(result, out, "sgn")


def sgn_(input):
    if not input.dtype.is_complex:
        return input.sign_()
    return input.copy_(sgn(input))


def conj_physical_(input):
    return input.copy_(_C.conj_physical(input)) if input.dtype.is_complex else input


def is_conj(input) -> bool:
    return False
