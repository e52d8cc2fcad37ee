"""The fuzzer's disagreements with torch that are deliberate, each with its reason.

``fuzz_ops.py --torch`` compares every call with torch 2.13's and reports a disagreement as
*listed* when an entry here matches it (the op, the kind of disagreement, the two exception
classes, and patterns of the two messages), else as *unlisted*. An unlisted disagreement is a
defect to fix, or a deliberate difference not yet written down here with its reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

REFUSES = "ember refuses what torch accepts"
ACCEPTS = "ember accepts what torch refuses"
CLASS = "exception class differs"
RESULT = "result differs"


@dataclass(frozen=True)
class Difference:
    reason: str
    kind: str
    ops: tuple[str, ...] = ()  # op names without "Tensor." and a trailing "_"; () is any op
    ember: str = "*"  # ember's exception class ("A|B": either), "ok" when it returned, "*": any
    torch: str = "*"
    ember_message: str = ""  # regular expressions searched in the messages
    torch_message: str = ""
    source: str = ""  # a regular expression searched in the call's source (its inputs)

    def matches(self, name: str, kind: str, ours, theirs, source: str = "") -> bool:
        if kind != self.kind:
            return False
        if self.ops and op_key(name) not in self.ops:
            return False
        if self.source and re.search(self.source, source) is None:
            return False
        return _side(self.ember, self.ember_message, ours) and _side(
            self.torch, self.torch_message, theirs)


def op_key(name: str) -> str:
    name = name.removeprefix("Tensor.")
    return name[:-1] if name.endswith("_") and not name.endswith("__") else name


def _side(cls: str, message: str, outcome) -> bool:
    raised = outcome[0] == "raise"
    if cls != "*" and (outcome[1] if raised else "ok") not in cls.split("|"):
        return False
    return not message or (raised and re.search(message, outcome[2]) is not None)


# A call with two faults is refused by both; which fault each framework reports first depends
# on the order of its checks, and that names the exception class. The fuzzer's calls often have
# two (a dtype the op lacks and a wrong out=, an overlapping in-place write, a dim out of range,
# mismatched shapes). A dtype gap of ember's own would also show in the fuzzer's one-fault calls
# as "ember refuses what torch accepts", which is never listed for these messages; an argument
# type torch's parser refuses (TypeError) is not check order and is not listed here.
# one reason for two kinds of disagreement (torch accepts the empty case, refuses the others
# with another class)
_BATCH_NORM_1D = (
    "native_batch_norm of a 1-d input: torch reads its dim 1 (an IndexError) except for an "
    "empty one in evaluation mode, which it returns; ember refuses any input of fewer than 2 "
    "dims with one RuntimeError (functional batch_norm's message)")

_CHECK_ORDER = (
    "both refuse a call with two faults and report a different one first: ember checks {e}, "
    "torch checks {t} (the order of checks, not a difference in what is accepted)")
_NOT_A_DTYPE_GAP = r"^(?!.*not implemented for)"
_NOT_A_DIM = r"^(?!.*(Dimension out of range|out of range|out of bounds))"
# (a rank fault is not a second fault beside torch's IndexError: torch reads a size of the
# operand of the wrong rank; those ops are listed one by one below)
_NOT_A_DIM_OR_RANK = r"^(?!.*(Dimension out of range|out of range|out of bounds|must be a \dD|" \
                     r"must be a matrix|dimensions))"

DIFFERENCES = [
    Difference(
        _CHECK_ORDER.format(e="that its kernel has the dtype before the shapes, out= and "
                              "overlap", t="those first"),
        CLASS, ember="NotImplementedError", torch="RuntimeError|IndexError|ValueError",
        ember_message=r"not implemented for '", torch_message=_NOT_A_DTYPE_GAP),
    Difference(
        _CHECK_ORDER.format(e="the shapes, out= and overlap", t="that its kernel has the "
                            "dtype first"),
        CLASS, ember="RuntimeError|IndexError|ValueError", torch="NotImplementedError",
        ember_message=_NOT_A_DTYPE_GAP, torch_message=r"not implemented for '"),
    Difference(
        _CHECK_ORDER.format(e="dtypes, out= and argument values before the dims' range",
                            t="the dims' range or the indices' bounds first (IndexError)"),
        CLASS, ember="RuntimeError", torch="IndexError", ember_message=_NOT_A_DIM_OR_RANK,
        torch_message=r"Dimension out of range|out of bounds|out of range|dimensionality|"
                      r"Index is supposed to be"),
    Difference(
        _CHECK_ORDER.format(e="the dims' range or the indices' bounds first (IndexError)",
                            t="dtypes, out= and argument values first"),
        CLASS, ember="IndexError", torch="RuntimeError",
        ember_message=r"Dimension out of range|out of range|out of bounds|Index should have "
                      r"dimension",
        torch_message=_NOT_A_DIM),
    Difference(
        "a reduction along a dim of size 1, or of a 0-d tensor, in a dtype torch's kernel lacks "
        "(uint16/uint32/uint64; complex for cummin, bool for kthvalue): torch returns the input "
        "(indices 0) by a shortcut that skips its kernels' dtype check, for some of these ops "
        "and sizes only; ember refuses these dtypes at every size, as torch does for longer dims",
        REFUSES, ("argmax", "argmin", "min", "max", "amin", "amax", "aminmax", "cummin",
                  "cummax", "mode", "nonzero_static", "kthvalue", "median", "nanmedian",
                  "cumsum", "cumprod", "topk"),
        ember="NotImplementedError", torch="ok",
        ember_message=r"not implemented for '(UInt16|UInt32|UInt64|ComplexFloat|ComplexDouble|"
                      r"Bool)'"),
    Difference(
        "clamp/clip of a complex tensor with a tensor bound and a second fault (shapes, "
        "overlap, out=): torch's clamp checks the complex input first, its clamp_min/clamp_max "
        "(the same computation here) after the shapes; ember checks them in clamp_min's order "
        "for every one-bound form",
        CLASS, ("clamp", "clip"), ember="RuntimeError", torch="NotImplementedError",
        torch_message="clamp is not supported for complex types"),
    Difference(
        "a CPU allocation beyond the machine's memory: ember raises Python's MemoryError (as "
        "NumPy and Python do), torch a RuntimeError from its allocator's assertion",
        CLASS, ember="MemoryError", torch="RuntimeError",
        torch_message=r"DefaultCPUAllocator|bad_alloc|not enough memory"),
    Difference(
        "an exponent of 1 (or True): torch's pow returns a copy of the input without reaching "
        "its kernel, so the kernel's dtype check (uint16/32/64) is skipped; ember checks the "
        "dtype for every exponent",
        REFUSES, ("pow",), ember="NotImplementedError", torch="ok",
        ember_message=r"not implemented for '(UInt(16|32|64)|Bool)'",
        source=r"pow_?\((True|False|1|0)\)$"),
    Difference(
        "the deprecated torch.cholesky of an empty tensor: torch returns an empty tensor before "
        "checking its rank and dtype; ember checks them, as linalg.cholesky does",
        REFUSES, ("cholesky",), ember="RuntimeError", torch="ok",
        ember_message=r"at least 2 dimensions|Expected a floating point",
        source=r"arange\(0\)|tensor\(\[\]"),
    Difference(
        "a Python number where a dtype goes: torch's parser reads the number's type (x.to(True) "
        "is x.to(bool), x.to(-2.5) is x.to(float64)); ember refuses it, as a number is no dtype",
        REFUSES, ("to",), ember="TypeError", torch="ok",
        ember_message=r"expected a device .* not (bool|float)|got \((bool|float|int)(, bool)*\)"),
    Difference(
        "lobpcg: torch checks its arguments with assert statements and fails inside its Python "
        "code on others (AssertionError, IndexError, AttributeError; under python -O the "
        "asserts vanish); ember raises ValueError, TypeError or RuntimeError for them",
        CLASS, ("lobpcg",), ember="*",
        torch="AssertionError|IndexError|AttributeError|TypeError|RuntimeError",
        torch_message=r"^(?!.*not implemented for)"),
    Difference(
        "an in-place op on a tensor whose elements overlap in memory (an expand()): ember refuses "
        "every such write, as torch's TensorIterator ops do; torch's triangle, diagonal and "
        "random in-place kernels do not check, and their result depends on the order they "
        "write in",
        REFUSES, ("tril", "triu", "fill_diagonal", "index_put", "copy", "threshold", "uniform",
                  "normal", "log_normal", "cumprod", "relu", "selu", "exponential", "cauchy",
                  "geometric", "random", "bernoulli"),
        ember="RuntimeError", torch="ok",
        ember_message="more than one element of the written-to tensor refers to a single "
                      "memory location"),
    Difference(
        "ember moves and selects elements of uint16/uint32/uint64 by their size, as it does for "
        "every dtype (triangles, flips, rotations, gathers, conjugation: the values are exact); "
        "torch's kernels for these ops are not instantiated for its shell unsigned types",
        ACCEPTS, ("triu", "tril", "flip", "rot90", "fliplr", "flipud", "gather", "take",
                  "take_along_dim", "index_select", "roll", "conj_physical", "masked_fill",
                  "index_put", "index_fill", "masked_select"),
        ember="ok", torch="NotImplementedError",
        torch_message=r"not implemented for 'UInt(16|32|64)'"),
    Difference(
        "torch reads a size of an operand of the wrong rank before it checks the rank (an "
        "IndexError from inside); ember reports the rank, with torch's own message for that check",
        CLASS, ("baddbmm", "addbmm", "mv", "addmv", "addr", "addmm", "scatter", "scatter_",
                "scatter_add", "scatter_add_", "scatter_reduce", "scatter_reduce_"),
        ember="RuntimeError", torch="IndexError",
        ember_message=r"must be a \dD tensor|expected|must be a matrix|"
                      r"must have the same number of dimensions",
        torch_message=r"^Dimension (out of range|specified as)"),
    Difference(
        "ember is built with CUDA support and there is no GPU here: torch's CUDA builds raise a "
        "RuntimeError there too; the torch compared with is a CPU-only build",
        CLASS, ("cuda", "to", "pin_memory", "is_pinned", "Generator", "record_stream"),
        ember="RuntimeError", torch="AssertionError",
        torch_message="Torch not compiled with CUDA enabled"),
    Difference(
        "torch's CPU-only build refuses any accelerator argument as a RuntimeError before it "
        "reads the argument's type",
        CLASS, ("is_pinned", "pin_memory"), torch="RuntimeError",
        torch_message="Cannot access accelerator device when none is available"),
    Difference(
        "torch's slice_scatter says 'slice step must be positive' (RuntimeError) where its own "
        "slicing and ember say ValueError for a step of 0 or less, as Python's slices do",
        CLASS, ("slice_scatter",), ember="ValueError", torch="RuntimeError",
        torch_message="slice step must be positive"),
    Difference(
        "torch fails inside its Python code (tuple unpacking, an attribute of an int) before it "
        "checks the argument; ember checks it and names the op and the argument",
        CLASS, ("pca_lowrank", "svd_lowrank", "tensordot", "split", "norm", "unravel_index"),
        torch_message=r"not enough values to unpack|object has no attribute|"
                      r"expected m1 and m2 to have the same dtype"),
    Difference(
        "a dim out of range is an IndexError in ember as in torch's other ops; torch's "
        "narrow_copy reports it from an internal assertion (RuntimeError)",
        CLASS, ("narrow_copy",), ember="IndexError", torch="RuntimeError",
        torch_message=r"Expected dim < static_cast"),
    Difference(
        "torch's CPU-only build has no Stream type to check against ('unknown parameter type'); "
        "ember's record_stream checks the argument's type (TypeError)",
        CLASS, ("record_stream",), ember="TypeError", torch="RuntimeError",
        torch_message="unknown parameter type"),
    Difference(
        "the median of an empty integer tensor: torch returns an unspecified value (0), ember "
        "refuses (there is no value to return; a floating tensor gives NaN in both)",
        REFUSES, ("median", "nanmedian"), ember="RuntimeError",
        ember_message="cannot compute the median of an empty tensor of an integral dtype"),
    Difference(
        "adjoint() of a 0-d tensor is deprecated in torch (it warns); ember refuses it",
        REFUSES, ("adjoint",), ember="RuntimeError", ember_message="only supported on matrices"),
    Difference(
        "torch's unique_consecutive with return_inverse given by position returns an empty "
        "inverse (by keyword, the inverse): a torch bug; ember returns the inverse both ways",
        RESULT, ("unique_consecutive",)),
    Difference(
        "i0 of +-inf in float16/bfloat16: torch gives NaN (its half-precision kernel overflows); "
        "ember gives the limit, inf, as torch's float32 and float64 do",
        RESULT, ("i0",)),
    Difference(
        "polygamma of an order beyond 170 (n! overflows every float): torch gives NaN, ember "
        "inf or NaN; neither is a value",
        RESULT, ("polygamma",)),
    Difference(
        "index_put with an empty list of indices: torch fails inside its kernel (an undefined "
        "tensor, an internal assertion); ember writes the values over the whole tensor, as "
        "x[()] = values does in both",
        ACCEPTS, ("index_put",), ember="ok", torch="RuntimeError",
        torch_message=r"undefined Tensor|INTERNAL ASSERT FAILED"),
    Difference(
        "torch.use_deterministic_algorithms(True), left on by another call in the worker: "
        "torch's put_ without accumulate raises its 'does not have a deterministic "
        "implementation' alert on the CPU too, before its other checks; ember's put_ writes in "
        "index order (the last duplicate wins, every run), so it runs or reports the call's "
        "own fault",
        ACCEPTS, ("put_", "put"), ember="ok", torch="RuntimeError",
        torch_message="does not have a deterministic implementation"),
    Difference(
        "(the same alert, in a call that also has a fault of its own, which ember reports)",
        CLASS, ("put_", "put"), torch="RuntimeError",
        torch_message="does not have a deterministic implementation"),
    Difference(
        "isin of a non-contiguous test_elements: torch flattens it with view() and fails (a "
        "torch bug); ember reads it as it is",
        ACCEPTS, ("isin",), ember="ok", torch="RuntimeError",
        torch_message="view size is not compatible"),
    Difference(
        "stft: torch's Python wrapper pads and reshapes the input before its parser checks "
        "n_fft (an AttributeError, int() of a tensor's ValueError, or the pad kernel's dtype "
        "error); ember checks the arguments' types first (TypeError naming the argument)",
        CLASS, ("stft",), ember="TypeError", ember_message=r"argument '\w+'.* must be "),
    Difference(
        "a call with a wrong argument type and a wrong value: torch's Python wrapper of cdist "
        "checks compute_mode's value before its parser checks the other arguments' types; "
        "ember's parser checks the types first (TypeError naming the argument)",
        CLASS, ("cdist",), ember="TypeError", torch="ValueError",
        torch_message=r"is not a valid value for compute_mode|^tensor\("),
    Difference(
        "unique_consecutive given a tensor for return_inverse/return_counts: torch's Python "
        "wrapper takes its truth value (a RuntimeError for more than one element) before its "
        "parser sees it; ember's parser refuses it as a TypeError naming the argument",
        CLASS, ("unique_consecutive", "unique"), ember="TypeError", torch="RuntimeError",
        ember_message=r"must be bool, not|unexpected keyword argument",
        torch_message="Boolean value of Tensor"),
    Difference(
        "addresses: two processes never agree on a data pointer",
        RESULT, ("data_ptr", "const_data_ptr", "untyped_storage")),
    Difference(
        "process state the two frameworks hold separately (random generator state, anomaly "
        "and warning switches set by other calls in the same worker)",
        RESULT, ("get_rng_state", "is_anomaly_enabled", "is_warn_always_enabled",
                 "is_anomaly_check_nan_enabled", "initial_seed", "seed",
                 "are_deterministic_algorithms_enabled",
                 "is_deterministic_algorithms_warn_only_enabled")),
    Difference(
        "an empty tensor: ember checks its dtype and shape (an index's dtype, a kernel the dtype "
        "has none for, square matrices, pivots' dtype) as it checks any other tensor's; torch's "
        "kernels for these ops return before their checks when there is nothing to compute",
        REFUSES, ("gather", "scatter", "take_along_dim", "bernoulli", "random", "cholesky",
                  "lu_unpack", "isin", "sum", "prod", "nansum", "pow", "svd_lowrank",
                  "bucketize", "searchsorted", "cdist", "cumprod", "cumsum", "normal",
                  "conv1d", "conv2d", "conv3d", "svd", "scatter_add"),
        ember_message=r"not implemented for|Expected dtype|dtype of indices|square matrices|"
                      r"LU_pivots|Promotion for|must be non-negative integer|"
                      r"can't be cast to the desired output type|Input type .* and weight type",
        source=r"arange\(0\)|tensor\(\[\]"),
    Difference(
        "complex 0 ** 0 is 1 in ember, as in NumPy, Python and C's cpow convention; torch's CPU "
        "kernel gives NaN (it computes exp(0 * log 0))",
        RESULT, ("pow", "float_power"), source="complex"),
    Difference(
        "a complex sum or difference with an infinite or NaN operand: torch multiplies the "
        "other operand by alpha as a complex product (inf * 0 is NaN in the imaginary part); "
        "ember and NumPy give the exact sum, the imaginary part kept",
        RESULT, ("add", "sub", "subtract"), source=r"(?=.*complex)(?=.*(inf|nan|e\+?3\d\d))"),
    Difference(
        "the factors of a rank-deficient matrix are not unique (the singular vectors of a zero "
        "singular value, Q's columns past the rank, LAPACK's reflectors there) and the "
        "determinant or pseudo-inverse of a singular one (a negative rcond keeps every singular "
        "value) is rounding noise in both; the fuzzer's matrices are mostly such. The linear "
        "algebra tests check these ops by reconstruction against NumPy",
        RESULT, ("svd", "qr", "geqrf", "logdet", "det", "pinverse")),
    Difference(
        "NaN in a matrix: which entries of LAPACK's result the NaN reaches depends on the "
        "order of its operations, not a value either framework defines",
        RESULT, ("cholesky_inverse", "cholesky", "inverse", "det", "slogdet"), source="nan"),
    Difference(
        "median / nanmedian along a dim of an expanded tensor (stride 0): torch's CPU kernel "
        "reads the wrong elements (x.expand(2, ...).median(0) differs from its .contiguous()'s); "
        "ember's result is the median of the values",
        RESULT, ("median", "nanmedian"), source=r"expand\("),
    Difference(
        "var_mean over values with an infinity: torch's one-pass (Welford) update gives NaN for "
        "the mean too (inf - inf), where its own mean() gives inf; ember's mean is mean()'s",
        RESULT, ("var_mean", "std_mean"), source=r"inf"),
    Difference(
        "resize_as_ grows a tensor into uninitialised memory in both frameworks",
        RESULT, ("resize_as", "resize")),
    Difference(
        "the sign of a NaN: torch's vectorised float-to-bfloat16 conversion writes NaN as 0xFFFF "
        "(the sign bit set), which copysign then reads; ember converts NaN to the quiet NaN "
        "0x7FC0, as c10's scalar conversion does (hash_tensor XORs the bits)",
        RESULT, ("copysign", "hash_tensor", "signbit"), source=r"(?=.*bfloat16)(?=.*nan)"),
    Difference(
        "NaN or an infinity converted to an unsigned type (also a sum's dtype=): the "
        "conversion is undefined in C++; torch's vectorised paths give other values than ember's "
        "(0x80000000 for NaN and -inf into uint32, where ember's gives 0)",
        RESULT, ("to", "type_as", "type", "copy", "sum", "nansum", "new_tensor"),
        source=r"(?=.*uint(8|16|32))(?=.*(nan|inf))"),  # (new_tensor: seed 659)
    Difference(
        "chunk with a count near 2**63: torch's split size (size + chunks - 1) / chunks "
        "overflows int64 and it reports a negative or zero split size; ember returns one chunk "
        "per element, as a count beyond the size gives",
        ACCEPTS, ("chunk",), torch="RuntimeError", torch_message="split_size",
        source=r"chunk\(922337203685477\d{4}"),
    Difference(
        "constant_pad_nd whose negative padding removes the whole input: torch fills the result "
        "through a path that converts the value unchecked (1e300 into float16 is inf); ember "
        "checks it as torch's other paths do (value cannot be converted ... without overflow)",
        REFUSES, ("constant_pad_nd", "pad"), ember="RuntimeError",
        ember_message="without overflow"),
    Difference(
        "triu_indices/tril_indices with an offset near 2**63: torch's count of the result "
        "overflows (Storage size calculation overflowed); ember's is exact: no index is kept",
        ACCEPTS, ("triu_indices", "tril_indices"), torch="RuntimeError",
        torch_message="overflowed"),
    Difference(
        "broadcast_to a negative size in a new leading dimension of a 0-d tensor: torch 2.13 "
        "returns a tensor of negative size (which then fails when read: negative dimensions "
        "are not allowed); ember refuses it as expand does",
        CLASS, ("broadcast_to",), ember="RuntimeError",
        ember_message="isn't allowed in a leading, non-existing dimension"),
    Difference(
        "a p of NaN: torch's norms give NaN or |x| depending on the path (pairwise_distance of "
        "0-d inputs NaN, vector_norm of one element |x|); ember's give |x| for one element",
        RESULT, ("pairwise_distance",), source=r", nan[,)]"),
    Difference(
        "combinations with r beyond the input's length: torch builds the grid of all n**r index "
        "tuples first and fails on its size (an overflow, bad_alloc); ember returns the empty "
        "(0, r) result, as torch does for a small r",
        ACCEPTS, ("combinations",), torch="RuntimeError",
        torch_message=r"max_size|overflow|bad_alloc"),
    Difference(
        "ldexp into an out= of another floating dtype: torch 2.13 fails an internal assertion "
        "(needs_dynamic_casting); ember casts the result into out, as other ops' out= do",
        ACCEPTS, ("ldexp",), torch="RuntimeError", torch_message="needs_dynamic_casting"),
    Difference(
        "a value on a bin edge: torch.histogram's edges come from its linspace, whose vectorised "
        "kernel adds the step to each vector's first value lane by lane (its roundings depend on "
        "the CPU's vector width); ember's linspace rounds start + i * step once per element, as "
        "torch's scalar path does, so an edge can differ by an ulp and the value fall in the "
        "next bin",
        RESULT, ("histogram",)),
    Difference(
        "torch's native_batch_norm in evaluation mode without running statistics reads the "
        "missing tensors (a segmentation fault for a non-empty input; an empty one returns); "
        "ember refuses, as torch's nn.functional.batch_norm does",
        REFUSES, ("native_batch_norm",), ember="RuntimeError",
        ember_message="running_mean and running_var must be defined in evaluation mode"),
    Difference(
        "a complex result into a real out=: torch's logsumexp drops the imaginary part "
        "silently; ember refuses the cast, as torch's other ops do (their own message)",
        REFUSES, ("logsumexp",), ember="RuntimeError",
        ember_message=r"result type Complex\w+ can't be cast to the desired output type"),
    Difference(
        "an out= of another shape whose elements overlap (an expand()) for an op whose result "
        "is cast into it: torch computes into a temporary and resizes out (the overlap goes "
        "with its old shape); ember checks the written-to tensor before the resize, as torch "
        "does when no cast is needed",
        REFUSES, (), ember="RuntimeError", torch="ok",
        ember_message="more than one element of the written-to tensor refers to a single "
                      "memory location", source=r"out=.*\.expand\("),
    Difference(
        "an index beyond the shape's size: torch 2.13's unravel_index wraps it silently; ember "
        "refuses it (ValueError), as NumPy's unravel_index does",
        REFUSES, ("unravel_index",), ember="ValueError",
        ember_message="'indices' must be in range"),
    Difference(
        "set_ of a tensor source with a geometry beyond the source's storage: torch grows the "
        "source's storage (uninitialised bytes, and the source's own memory moves); ember "
        "refuses to grow another tensor's storage",
        REFUSES, ("set",), ember="RuntimeError", ember_message="setStorage: .* out of bounds"),
    Difference(
        "max/min of an empty tensor with out=: torch's out= form returns out resized to 0-d "
        "with an unspecified value; ember refuses, as both do without out= (no identity)",
        REFUSES, ("max", "min"), ember="RuntimeError",
        ember_message=r"Expected reduction dim to be specified for input.numel\(\) == 0"),
    Difference(
        "float16 with a complex operand: torch's result type is complex32 (ComplexHalf), which "
        "its CPU kernels lack; ember has no complex32 and computes in complex64",
        ACCEPTS, (), ember="ok", torch_message="ComplexHalf"),
    Difference(
        "logsumexp over an empty dim list of an integer tensor: torch's integer path writes "
        "into a 0-d out and fails its own shape check; ember reduces over every dim, as torch "
        "does for a floating tensor",
        ACCEPTS, ("logsumexp",), ember="ok",
        torch_message="output with shape \\[\\] doesn't match the broadcast shape"),
    Difference(
        "uint16/uint32/uint64 with another dtype: torch refuses to promote its shell unsigned "
        "types; ember promotes them as NumPy does (uint32 with int64 is int64, with a float or "
        "complex dtype that dtype)",
        ACCEPTS, (), ember="ok",
        torch_message="Promotion for uint16, uint32, uint64 types is not supported"),
    Difference(
        "a reduction of a real input into a complex out=: torch computes in out's dtype and "
        "has no complex kernel for it; ember computes in the input's dtype and casts the real "
        "result into out",
        ACCEPTS, ("nanmean", "nansum", "var", "std", "var_mean", "std_mean"), ember="ok",
        torch_message=r"not implemented for 'Complex"),
    Difference(
        "torch's parser takes a tensor of any dtype where a size or an int goes and fails "
        "inside on a non-integer one (an internal assertion, RuntimeError); ember's parser "
        "refuses it as a TypeError naming the argument",
        CLASS, (), ember="TypeError", torch="RuntimeError",
        torch_message=r"Expected scalar.isIntegral\( false\)"),
    Difference(
        "from_dlpack of an object that is neither a tensor with __dlpack__ nor a capsule: "
        "ember names the wrong type (TypeError); torch reads it as a capsule and reports an "
        "invalid one (RuntimeError)",
        CLASS, ("from_dlpack",), ember="TypeError", torch="RuntimeError",
        torch_message="from_dlpack received an invalid capsule"),
    Difference(
        "torch's deprecated sub(input, alpha, other) overload takes Python numbers as its "
        "tensors (and then refuses a bool's subtraction); ember has only the current "
        "signature, so three positional numbers are a TypeError",
        CLASS, ("sub", "subtract"), ember="TypeError", torch="RuntimeError",
        torch_message="Subtraction, the `-` operator, with a bool tensor is not supported"),
    Difference(
        "a one-element tensor as narrow's start: torch's overload for a tensor start wants a "
        "0-d one; ember reads start as a SymInt (a one-element integer tensor of any shape), "
        "as torch reads length",
        ACCEPTS, ("narrow",), ember="ok",
        torch_message=r"start must be an 0-dim integral Tensor"),
    Difference(
        "torch's sum over every element has no out= parameter, so even out=None is its "
        "TypeError; ember's one signature takes out= (None: no out)",
        ACCEPTS, ("sum",), ember="ok", torch="TypeError",
        torch_message=r"out=NoneType|missing 1 required positional arguments: \"dim\""),
    Difference(
        "torch's parser takes a bool tensor where a SymInt goes and then fails inside (an "
        "internal assertion); ember reads it as 0 or 1, as it reads a Python bool there",
        ACCEPTS, (), ember="ok", torch_message=r"scalar.isIntegral\( false\)"),
    Difference(
        "the same internal assertion where ember's own check of the call comes first (an empty "
        "reduction dim, say): a different class for the same refusal",
        CLASS, (), torch="RuntimeError", torch_message=r"scalar.isIntegral\( false\)"),
    Difference(
        "lobpcg with k = 0: torch's Python code divides by a power of 0 (ZeroDivisionError); "
        "ember's fails on its empty block of vectors (RuntimeError)",
        CLASS, ("lobpcg",), torch="ZeroDivisionError"),
    Difference(
        "a negative size with an out= of no elements: torch's out path reports it while "
        "resizing (ValueError: negative dimensions are not allowed); ember's RuntimeError is "
        "torch's own for the same size without out=",
        CLASS, ("randn", "rand", "zeros", "ones", "empty", "full", "randint"), ember="RuntimeError",
        torch="ValueError", torch_message="negative dimensions are not allowed"),
    Difference(
        "unfold with a step near 2**63: torch's strides of the result overflow (as_strided: "
        "Negative strides); ember's view is the exact one",
        ACCEPTS, ("unfold",), torch="RuntimeError", torch_message="Negative strides"),
    Difference(
        "a bool or floating tensor among a size's ints: torch's parser takes it and fails later "
        "(an internal assertion, or a check of out= first); ember refuses the element as a "
        "TypeError, as it refuses any element that is no int",
        CLASS, (), ember="TypeError",
        ember_message="must be tuple of ints, but found element of type Tensor"),
    Difference(
        "kron of a non-contiguous operand: torch's kron reshapes with view() and fails ('view "
        "size is not compatible'); ember's reshape copies where it must",
        ACCEPTS, ("kron", "take_along_dim"), ember="ok",
        torch_message="view size is not compatible"),
    Difference(
        "native_batch_norm with only one of running_mean/running_var: ember refuses the pair "
        "first (ValueError); torch reads a size of the input first",
        CLASS, ("native_batch_norm",), ember="ValueError", torch="IndexError|RuntimeError",
        ember_message="must either both be None or neither be None"),
    Difference(
        "a negative float as a uint64 tensor's value: torch's uint64 path converts through "
        "Python's int protocol (TypeError); ember's checked conversion reports the overflow",
        CLASS, ("tensor",), ember="RuntimeError", torch="TypeError",
        torch_message="an integer is required"),
    Difference(
        "resize_ with a negative size given through a tensor: torch's NumPy-style check says "
        "ValueError there (RuntimeError for an int); ember says RuntimeError for both",
        CLASS, ("resize",), ember="RuntimeError", torch="ValueError",
        torch_message="negative dimensions are not allowed"),
    Difference(
        "a complex 0-d tensor where a float or int goes: torch's parser takes the tensor and its "
        "conversion fails (RuntimeError); ember's parser refuses it (TypeError)",
        CLASS, (), ember="TypeError", torch="RuntimeError",
        torch_message=r"value cannot be converted to type (double|int64_t) without overflow"),
    Difference(
        "istft checks the input's dtype before its parameters' types; ember's parser checks "
        "the types first (TypeError naming the argument)",
        CLASS, ("istft",), ember="TypeError", torch="RuntimeError",
        torch_message="istft requires a complex-valued input"),
    Difference(
        "unravel_index into a shape with a zero: torch divides by it (ZeroDivisionError as a "
        "RuntimeError); ember reports the index out of range (ValueError), as NumPy",
        CLASS, ("unravel_index",), ember="ValueError", torch="RuntimeError",
        torch_message="ZeroDivisionError|Promotion for uint16, uint32, uint64"),
    Difference(
        "logspace/linspace of one step with a start beyond the dtype's range: torch fills "
        "base**start computed in double (inf); ember converts start to the result's dtype "
        "first, checked",
        REFUSES, ("logspace", "linspace"), ember="RuntimeError",
        ember_message="value cannot be converted to type .* without overflow"),
    Difference(
        "bfloat16/float16 xlogy: torch rounds log(y) to the half type before the product (two "
        "roundings); ember rounds once (the product in float32)",
        RESULT, ("xlogy",), source=r"bfloat16|float16"),
    Difference(
        "ldexp of two 0-d tensors of bfloat16 and float16: torch's scalar path computes 2**other "
        "in float32 there; ember in the exponent's dtype, as torch does for every other shape",
        RESULT, ("ldexp",), source=r"reshape\(\[\]\).*reshape\(\[\]\)"),
    Difference(
        "float16/bfloat16 matrix_exp: torch's scaling and squaring in the half type overflows "
        "to NaN for entries of a few units; ember computes in float32 and rounds (SciPy's "
        "expm's values)",
        RESULT, ("matrix_exp",), source="float16"),
    Difference(
        "normal(mean tensor, std number, out=): torch broadcasts mean's shape with out's old "
        "shape (an out of [1, 4, 1] for a [4, 4] mean becomes [1, 4, 4]); ember resizes out to "
        "mean's shape, as torch does for normal's other forms",
        RESULT, ("normal",), source="out="),
    Difference(
        "normal(mean tensor[, std number], out=) where out's old shape does not broadcast with "
        "mean's: torch broadcasts the two and refuses; ember resizes out to mean's shape, as "
        "torch does for normal's other forms",
        ACCEPTS, ("normal",), ember="ok", torch_message="The size of tensor a", source="out="),
    Difference(
        "the inverse (matrix_power -1) of a matrix singular in exact arithmetic: whether the LU "
        "factorization meets an exact zero pivot depends on the order of its roundings (torch's "
        "LAPACK and ember's copy the matrix in different layouts); torch returned huge values, "
        "ember refuses",
        REFUSES, ("matrix_power", "inverse", "inv"), ember="LinAlgError",
        ember_message="is zero"),
    Difference(
        "lu_unpack of pivots whose shape does not fit LU (batch or length): torch 2.13 reads "
        "what it can; ember refuses the mismatch",
        REFUSES, ("lu_unpack",), ember="RuntimeError", ember_message="do not match LU_data"),
    Difference(
        "diff of an empty dim into out=: torch's out path narrows from 1 and fails; ember "
        "returns the empty difference, as torch's diff without out= does",
        ACCEPTS, ("diff",), ember="ok", torch_message="start out of range", source="out="),
    Difference(
        "unique_consecutive with return_inverse given by position as a tensor and dim twice: "
        "torch's boolean dispatch reads the tensor's truth first; ember's parser reports the "
        "repeated dim first (both refuse)",
        CLASS, ("unique_consecutive",), ember="TypeError", torch="RuntimeError",
        ember_message="multiple values"),
    Difference(
        "Tensor.subtract(other, alpha) with alpha by position: torch's only overload that takes "
        "it so is subtract(Scalar other, Scalar alpha), which reads a 0-d tensor other as a "
        "Python number (its dtype ignored in the promotion); ember keeps it a tensor",
        RESULT, ("subtract",)),
    Difference(
        "Tensor.subtract(other, alpha) with alpha by position and a 0-d complex other of an "
        "unsigned tensor: torch's Scalar overload takes the number; ember's tensor promotion "
        "refuses uint16/32/64 with complex",
        REFUSES, ("subtract",), ember="RuntimeError", ember_message="Promotion for uint16"),
    Difference(
        "cov with a correction near the most negative int64: torch's int64 observation count "
        "minus the correction overflows (NaN); ember's count is exact",
        RESULT, ("cov",), source="correction=-9223372036854775808"),
    Difference(
        "kaiser_window with a beta beyond the dtype's range: torch computes in the window's "
        "dtype, where beta is inf (inf * 0 is NaN at the ends); ember computes in float64 and "
        "rounds",
        RESULT, ("kaiser_window",), source=r"beta=\d+e\+?\d{2,}"),
    Difference(
        "unravel_index of a Python int: torch's implementation calls .is_complex() on it "
        "(an AttributeError); ember takes the int as a 0-d tensor",
        ACCEPTS, ("unravel_index",), ember="ok", torch="AttributeError"),
    Difference(
        "chunk into nearly 2**63 chunks: torch's ceiling division overflows to a split size of "
        "0; ember's gives one chunk per element",
        ACCEPTS, ("chunk",), ember="ok", torch_message="split_size can only be 0"),
    Difference(
        "out=False: torch's parser takes a bool for the out tensor (then fails a cast); ember "
        "refuses a non-tensor out (both refuse)",
        CLASS, (), ember="TypeError",
        ember_message=r"argument 'out' must be Tensor, not bool|out=bool\)"),
    Difference(
        "the legacy Tensor(tensor, True) constructor: torch 2.13 reads the pair as data; ember's "
        "Tensor(...) takes sizes or one sequence",
        REFUSES, ("Tensor",), ember="TypeError", ember_message="data must be a sequence"),
    Difference(
        "matmul of empty operands of two dtypes: torch's empty shortcut returns before its "
        "dtype check; ember checks the dtypes first, as torch does for non-empty ones",
        REFUSES, ("matmul", "bmm"), ember="RuntimeError|NotImplementedError",
        ember_message="expected scalar type|not implemented for 'Bool'|to have the same dtype"),
    Difference(
        "addr of a uint64 vector and a bool one: torch's addr kernel multiplies them without "
        "promoting; ember's outer product promotes, and uint64 with bool is refused as torch's "
        "promote_types refuses it",
        REFUSES, ("addr",), ember="RuntimeError", ember_message="Promotion for uint16"),
    Difference(
        "nanmean of an empty real tensor with a complex dtype=: torch returns before its "
        "kernel's dtype check; ember refuses complex, as torch does for non-empty inputs",
        REFUSES, ("nanmean",), ember="NotImplementedError", ember_message="nansum_cpu"),
    Difference(
        "an int beyond int64 with two leading numbers (add(True, 2**70, t)): torch's parser "
        "tries to convert it (OverflowError); ember's finds no signature first (TypeError)",
        CLASS, ("add", "sub", "mul", "div", "subtract"), ember="TypeError", torch="OverflowError"),
    Difference(
        "rsub of a real tensor holding inf from a complex one: torch multiplies the real tensor "
        "by alpha in complex arithmetic (inf * (1 + 0j) has a NaN imaginary part); ember "
        "converts it exactly (imaginary part 0), as NumPy's",
        RESULT, ("rsub",)),
    Difference(
        "a convolution with zero input channels: torch 2.13 returns an empty (N, 0, L) tensor; "
        "ember returns the (N, C_out, L) sum over no channels (zeros), as a product with an "
        "empty dim does",
        RESULT, ("conv1d", "conv2d", "conv3d")),
    Difference(
        "lobpcg starts from a random X drawn from each framework's own generator: another "
        "start, another approximation where the iteration does not converge",
        RESULT, ("lobpcg",)),
    Difference(
        "clamp(int tensor, number, 0-d tensor): torch's Scalar overload takes the 0-d tensor as "
        "a number (the input's dtype kept); ember's tensor overload promotes with it",
        RESULT, ("clamp", "clip"), source=r"\.reshape\(\[\]\)\)$"),
    Difference(
        "unique_consecutive with a list as input and a tensor by position: torch's boolean "
        "dispatch reads the tensor's truth first; ember's parser refuses the list first (both "
        "refuse)",
        CLASS, ("unique_consecutive",), ember="TypeError", torch="RuntimeError",
        ember_message="must be Tensor, not list"),
    Difference(
        "cauchy_ with a 0-d complex tensor as median or sigma: torch's double parameter refuses "
        "its imaginary part; ember's Python body reads the real part",
        ACCEPTS, ("cauchy",), ember="ok", torch_message="cannot be converted to type double"),
    Difference(
        "set_(None): torch's parser has no None source (set_() takes none); ember's keyword "
        "default is None, so set_(None) is set_()",
        ACCEPTS, ("set",), ember="ok", source=r"\.set_\(None\)"),
    Difference(
        "pairwise_distance of an empty and a 0-d complex tensor with a tiny p: rounding of "
        "0 ** (1 / p) differs (both return an empty-input norm)",
        RESULT, ("pairwise_distance",), source=r"reshape\(\[0\]\)"),
    Difference(
        "logsumexp of a half-precision input into a wider out=: torch computes parts of it in "
        "out's dtype (2.3128 for [1, 2] in bfloat16 into float64, float64's is 2.3133); ember "
        "computes in float32, rounds to the input's dtype and widens",
        RESULT, ("logsumexp",), source="out="),
    Difference(
        "householder_product/orgqr of an integer input with a 0-d tau: torch reads tau's last "
        "size first (IndexError); ember checks the input's dtype first (both refuse)",
        CLASS, ("orgqr", "householder_product"), ember="RuntimeError", torch="IndexError"),
    Difference(
        "sum(keepdim=...) without dim of a tensor that reaches the autograd hook: torch's "
        "parser has no such signature (TypeError); ember's hooked call reaches the Python "
        "formula, which sums every element (the core binding refuses it as torch does)",
        ACCEPTS, ("sum",), ember="ok", torch="TypeError", source="keepdim="),
    Difference(
        "repeat_interleave of an empty tensor with an output_size that is not 0: torch 2.13 "
        "returns the empty result without comparing; ember checks output_size as it does for "
        "non-empty inputs",
        REFUSES, ("repeat_interleave",), ember="RuntimeError",
        ember_message="Invalid output_size"),
    Difference(
        "geqrf of an empty float16 tensor: torch returns before its kernel's dtype check; "
        "ember checks the dtype first, as torch does for non-empty inputs",
        REFUSES, ("geqrf", "pinverse"), ember="NotImplementedError|RuntimeError",
        ember_message="not implemented for 'Half'|float, double, cfloat or cdouble"),
    Difference(
        "complex slogdet and logspace with a base of -inf into an integer dtype, bfloat16 "
        "true_divide into a complex out: rounding of the intermediate steps (LAPACK's pivot "
        "order on a nearly singular complex matrix; -inf ** x; the bfloat16 quotient)",
        RESULT, ("slogdet", "logspace", "true_divide")),
    Difference(
        "an overlapping (expanded) out= of nonzero, isneginf and isposinf: torch refuses it; "
        "ember resizes such an out to the result's shape first (fresh memory, so no element "
        "is written twice), as its other composites' out= do",
        ACCEPTS, ("nonzero", "isneginf", "isposinf"), ember="ok",
        torch_message="more than one element of the written-to tensor"),
    Difference(
        "sum(input, dtype=..., out=None): torch's whole-tensor sum has no out= (a TypeError for "
        "the missing dim); ember's one signature reaches the dtype's kernel check first",
        CLASS, ("sum",), torch="TypeError", torch_message="missing 1 required positional"),
    Difference(
        "an uninitialised tensor (Tensor(n), empty, resize_ growing): its values are whatever "
        "the memory held, in either framework",
        RESULT, ("Tensor",), source=r"m\.Tensor\((\d+|m\.tensor\(\[\d+\][^)]*\)[^)]*\))(, \d+)*\)"),
    Difference(
        "torch's 1-d adaptive pools check the non-batch sizes unevenly (a max pool of (N, 0, L) "
        "is refused, an average pool of an unbatched (C, 0) accepted); ember's checks follow "
        "its n-d pools",
        REFUSES, ("adaptive_avg_pool1d",), ember="RuntimeError",
        ember_message="Expected input to have non-zero size for non-batch dimensions"),
    Difference(
        "torch's 1-d adaptive pools check the non-batch sizes unevenly (see above)",
        ACCEPTS, ("adaptive_max_pool1d",), ember="ok",
        torch_message="Expected input to have non-zero size for non-batch dimensions"),
    Difference(
        "cov with weights that sum to zero (empty ones): torch refuses to normalise; ember "
        "returns NaN, as NumPy's cov (a 0/0 for an empty sample), and it checks fweights' "
        "dtype only where it reads them",
        ACCEPTS, ("cov",), ember="ok",
        torch_message=r"weights sum to zero|expected fweights to have integral dtype"),
    Difference(
        "a tensor size argument that is a bool tensor or a bool (resize_(True)): torch's parser "
        "refuses or fails inside; ember reads a bool as 0 or 1 where it reads an int",
        ACCEPTS, ("resize", "randn"), ember="ok",
        torch_message=r"isIntegral|must be tuple of ints, not bool"),
    Difference(
        "ember moves and selects uint16/uint32/uint64 and bool elements by size (see above): "
        "the selections that torch builds on index_select, masked_select and count_nonzero",
        ACCEPTS, ("combinations", "repeat_interleave", "count_nonzero"), ember="ok",
        torch_message=r"not implemented for 'UInt(16|32|64)'"),
    Difference(
        "an out= of a dtype the sampler has no kernel for (an integer): ember draws in the "
        "parameters' floating dtype and casts into out; torch draws in out's dtype and refuses",
        ACCEPTS, ("normal",), ember="ok",
        torch_message=r"normal_kernel_cpu|can.t be cast to the desired output type|min_all"),
    Difference(
        "an overlapping or mismatched out= of addr and renorm: torch's kernels write out as "
        "given (a check ember does in the result's copy instead: a resize for an out of "
        "another shape, a cast for another dtype)",
        ACCEPTS, ("addr", "renorm"), ember="ok",
        torch_message=r"more than one element of the written-to tensor|Expected out tensor to "
                      r"have dtype|Boolean (alpha|beta) only supported for Boolean results"),
    Difference(
        "std/var of bfloat16 into a complex out=: torch's full-reduction path refuses "
        "bfloat16; ember computes in float32 and casts",
        ACCEPTS, ("std", "var"), ember="ok", torch_message="Unsupported dtype BFloat16"),
    Difference(
        "arange with an infinite step that gives one element: torch converts the step to int64 "
        "for an integer out= (overflow); ember's one element is start",
        ACCEPTS, ("arange",), ember="ok",
        torch_message="value cannot be converted to type int64_t without overflow"),
    Difference(
        "fill_ and fill_diagonal_ of one element with a value beyond float16's range: torch's "
        "one-element shortcut writes it unchecked (inf); ember checks the conversion, as torch "
        "does for more elements",
        REFUSES, ("fill", "fill_diagonal"), ember="RuntimeError",
        ember_message="value cannot be converted to type .* without overflow"),
    Difference(
        "empty_strided with a negative stride and no elements: torch makes the empty tensor; "
        "ember refuses negative strides everywhere, as torch's as_strided does",
        REFUSES, ("empty_strided", "new_empty_strided"), ember="RuntimeError",
        ember_message="Negative strides are not supported"),
    Difference(
        "uint16/uint32/uint64 with another dtype in clamp/addcmul: torch's promotion rule "
        "refuses these types in some of its ops and not others (a 0-d bound, a kernel that "
        "computes in the other operand's dtype); ember applies its rule by op",
        REFUSES, ("clamp", "addcmul", "addcdiv", "isin"), ember="RuntimeError",
        ember_message="Promotion for uint16, uint32, uint64 types is not supported"),
    Difference(
        "pdist of bfloat16 with one row: torch returns the empty result before its dtype "
        "dispatch; ember refuses bfloat16 at every size, as torch does for two rows or more",
        REFUSES, ("pdist",), ember="NotImplementedError", ember_message="not implemented for"),
    Difference(
        "torch.Stream's positional (stream_id, device_index, device_type) constructor for "
        "streams made elsewhere: ember's Stream takes a device and a priority only",
        REFUSES, ("Stream",), ember="TypeError"),
    Difference(
        "the same constructor where torch then refuses the numbers (an invalid device type: "
        "its RuntimeError): ember's TypeError for the extra positional arguments comes first",
        CLASS, ("Stream",), ember="TypeError", torch="RuntimeError",
        torch_message="isValidDeviceType|not linked with support"),
    Difference(
        "the p-norm of a single element reduced over a 0-d tensor's dim -1 (pairwise_distance's "
        "case): torch's reduction kernel takes its general-p path there, (|x|^p)^(1/p), which "
        "is NaN for p=NaN and 1.0 for p=1e-30, where the same element as a 1-d tensor, or with "
        "no dim, gives |x|; ember gives |x| for all",
        RESULT, ("pairwise_distance", "norm", "linalg.vector_norm"), source=r"reshape\(\[\]\)"),
    Difference(
        "triu_indices with an offset of -2**63: torch's row arithmetic overflows and returns "
        "indices past the last row; ember's offset below -rows takes every element",
        RESULT, ("triu_indices", "tril_indices"), source=r"-9223372036854775808"),
    Difference(
        "cov of one observation with aweights of a wider dtype: torch's one-observation path "
        "multiplies the two dtypes unpromoted (its mm refuses them); for more observations it "
        "promotes, as ember does for any number",
        ACCEPTS, ("cov",), torch="RuntimeError", torch_message="to have the same dtype"),
    Difference(
        "UntypedStorage(-2**63): torch's byte count wraps past its negative-size check (a "
        "storage of size -2**63 with no memory); ember refuses every negative size, as torch "
        "does for -1",
        REFUSES, ("UntypedStorage",), ember="RuntimeError", source=r"-9223372036854775808"),
    Difference(
        "slice_scatter with a step near 2**63: torch multiplies it into the view's stride, "
        "which overflows into a negative one (its as_strided error); ember's slice keeps the "
        "step (one element taken)",
        ACCEPTS, ("slice_scatter",), torch="RuntimeError", torch_message="Negative strides"),
    Difference(
        "std/var of a complex input into an overlapping (expanded) out= that must be resized: "
        "torch's complex path adds the parts' variances into out, checking its overlap before "
        "the resize; ember resizes out first, as every reduction (torch's real path too)",
        ACCEPTS, ("std", "var"), torch="RuntimeError", torch_message="single memory location"),
    Difference(
        "native_batch_norm with a weight or bias of more than C elements: torch reads the first "
        "C whatever the shape (and past the end of a shorter one: a crash in eval mode); ember "
        "refuses any other count than C",
        REFUSES, ("native_batch_norm",), ember="RuntimeError",
        ember_message="expected (weight|bias|running_mean|running_var) to have"),
    Difference(
        "the bits of a NaN converted to bfloat16, seen through view(): torch's vectorised "
        "conversion gives 0xFFFF, its scalar one and ember's 0x7FC0; both are NaN, and which "
        "NaN is not specified",
        RESULT, ("view", "view_as"), source=r"nan.*bfloat16|bfloat16.*nan"),
    Difference(
        "native_batch_norm of an empty input with parameters of other dtypes: torch returns the "
        "empty result before it reads them; ember checks the parameters' dtypes first",
        REFUSES, ("native_batch_norm",), ember="RuntimeError", ember_message="mixed dtype"),
    Difference(
        "bmm/mm with an out dtype as third argument (torch's bmm.dtype overload): torch has it "
        "for CUDA only, a NotImplementedError on the CPU; ember has no such overload (a "
        "TypeError for the third argument)",
        CLASS, ("bmm", "mm", "addmm", "baddbmm"), ember="TypeError", torch="NotImplementedError",
        torch_message="Could not run 'aten::"),
    Difference(
        "cov of a 0-d input (one observation) with aweights: torch's result takes the default "
        "dtype there, whatever aweights' dtype; for more observations both promote with "
        "aweights (an integer input's result is aweights' dtype)",
        RESULT, ("cov",), source=r"reshape\(\[\]\)"),
    Difference(
        "combinations with r beyond what torch can build (it stacks r views of the input in a "
        "std::vector first: a RuntimeError, or the process killed for memory): ember returns "
        "the empty (0, r) result as for any r above the input's length (a shape NumPy cannot "
        "hold, hence the fuzzer's ValueError)",
        CLASS, ("combinations",), ember="ValueError", torch="RuntimeError",
        torch_message="larger than max_size|bad_alloc|overflow"),
    Difference(
        "values with NaN, inf or a singular matrix: which results the NaN reaches, and the "
        "order of unique's unsorted output, depend on the order of operations, not on a rule",
        RESULT, ("pdist", "dist", "inverse", "unique", "matrix_power", "cross"),
        source=r"nan|inf|arange\(16\)"),
    Difference(
        "torch's deprecated overloads with scalars first (addmm_(beta, mat1, mat2), addmv(beta, "
        "mat, vec)): ember keeps the current signatures only (a TypeError for the extra "
        "positional arguments)",
        CLASS, ("addmm", "addmv", "baddbmm", "addbmm", "addr"), ember="TypeError",
        ember_message=r"takes \d+ positional arguments but \d+ were given"),
    Difference(
        "a 0-d input of addmv/ormqr: torch reads a dim of it first (IndexError); ember reports "
        "the sizes or the dtype (RuntimeError)",
        CLASS, ("addmv", "ormqr", "take_along_dim"), ember="RuntimeError", torch="IndexError",
        torch_message="Dimension specified as"),
    Difference(
        "torch's histogramdd takes bins as an int, a list or tensors, and checks the input's "
        "dtype before it looks at a tensor bins' kind; ember refuses a 0-d tensor as bins first",
        CLASS, ("histogramdd",), ember="TypeError"),
    Difference(
        "torch's tensordot checks its dims with assert (AssertionError, gone under python -O); "
        "ember raises RuntimeError with the same message",
        CLASS, ("tensordot",), ember="RuntimeError", torch="AssertionError"),
    Difference(
        "tile/repeat by the most negative int64 on an empty tensor: torch's SymInt arithmetic "
        "overflows (an internal error); ember's product with a size of 0 is 0",
        ACCEPTS, ("tile", "repeat"), ember="ok", torch_message="RegisterCompositeExplicitAutograd"),
    Difference(
        "hash_tensor with a mode other than 0 on a non-empty tensor: torch 2.13 ignores it; "
        "ember refuses it, as torch does for an empty one",
        REFUSES, ("hash_tensor",), ember="RuntimeError", ember_message="Unknown hash_tensor mode"),
    Difference(
        "cov of a complex input with bool fweights: torch checks the weights' dtype first; ember "
        "reaches its clamp of the degrees of freedom first (both refuse)",
        CLASS, ("cov",), ember="NotImplementedError", torch="RuntimeError",
        torch_message="expected fweights to have integral dtype"),
    Difference(
        "torch's deprecated add/sub(input, alpha, other) overloads take Python numbers for "
        "both tensors (sub(0, 0, 2) is tensor(0)); ember has only the current signatures, "
        "where three numbers are a TypeError",
        REFUSES, ("add", "sub", "subtract"), ember="TypeError",
        ember_message=r"got \((int|float|bool|complex), (int|float|bool|complex|Tensor), "
                      r"(other=)?(int|float|bool|complex|Tensor)\)"),
    Difference(
        "the same deprecated overloads where torch's call then fails (add(True, True, 1e300): a "
        "float alpha for bool tensors): ember's TypeError for three numbers comes first",
        CLASS, ("add", "sub", "subtract"), ember="TypeError",
        ember_message=r"got \((int|float|bool|complex), (int|float|bool|complex), "
                      r"(other=)?(int|float|bool|complex|Tensor)"),
    Difference(
        "cdist, a convolution, scatter_reduce or index_fill of empty operands: torch's empty "
        "shortcut returns before its dtype and parameter checks (mixed dtypes, a dilation of 0, "
        "a float index, an index out of range); ember checks them first, "
        "as torch does for non-empty ones",
        REFUSES, ("cdist", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                  "conv_transpose3d", "convolution", "scatter_reduce", "index_fill"),
        ember="RuntimeError|IndexError",
        ember_message="expected scalar type|should be greater than zero|Expected dtype int32|"
                      "is out of bounds for dimension",
        source=r"arange\(0\)"),
    Difference(
        "dist of a float16 tensor and a complex one: torch computes in complex32 (ComplexHalf) "
        "and rounds its float16 result; ember has no complex32 and computes in complex64",
        RESULT, ("dist",), source=r"(?=.*float16)(?=.*complex)"),
    Difference(
        "complex() of two float16 tensors: torch makes a complex32 (ComplexHalf) tensor, which "
        "the fuzzer cannot read back (TypeError); ember has no complex32 and refuses, naming it",
        CLASS, ("complex",), ember="RuntimeError", torch="TypeError",
        ember_message="complex32", torch_message="ComplexHalf"),
    Difference(
        "a negative matrix_power of a matrix singular in exact arithmetic (the fuzzer's "
        "matrices mostly are): the inverse's huge entries are rounding noise in both",
        RESULT, ("matrix_power",), source=r", -\d+\)$"),
    Difference(
        "the most negative int64 among split sizes or indices: torch refuses it as outside its "
        "SymInt range; ember takes the int64 (a split index before the start is clamped, as "
        "torch's are)",
        ACCEPTS, ("hsplit", "vsplit", "dsplit", "tensor_split"), ember="ok",
        torch_message="cannot be represented as a SymInt"),
    Difference(
        "isin with assume_unique=True of inputs that are not unique: the result is undefined "
        "(torch's sort-based path marks wrong elements); ember gives the exact answer",
        RESULT, ("isin",), source="assume_unique=True"),
    Difference(
        "a p-norm distance with a huge finite p (1e300): |d|^p overflows and 1/p underflows, "
        "so the result is not the max-norm limit in either framework, and which wrong value "
        "comes out (inf, 1, or the max of |d|) depends on each kernel's order of operations "
        "(torch's own vector_norm and cdist disagree). Left: a scaled p-norm for huge p. With "
        "a tiny p (1e-5), torch's float32 |d|^p rounds near 1 and the 1/p power magnifies it "
        "(5.7682 for |d| = 5.75); ember's one-element norm is exact",
        RESULT, ("pairwise_distance", "cdist", "dist"), source=r"1e\+?300|1e-0?5"),
    Difference(
        "take_along_dim of a bool tensor with an index out of range: torch 2.13's kernel "
        "reads outside the tensor without a check; ember refuses it, as torch does for the "
        "other dtypes",
        REFUSES, ("take_along_dim",), ember="RuntimeError", ember_message="out of bounds"),
    Difference(
        "svd_lowrank's q given a tensor: torch's Python function has no type checks and fails "
        "wherever the tensor meets an int's use; ember refuses it as a TypeError",
        CLASS, ("svd_lowrank", "pca_lowrank"), ember="TypeError",
        ember_message="argument 'q' must be int"),
    Difference(
        "torch's unique is a Python function that takes its arguments untyped and fails "
        "wherever a number meets a tensor's use; ember's parser refuses a number as input "
        "(TypeError)",
        CLASS, ("unique", "unique_consecutive"), ember="TypeError",
        ember_message="argument 'input'"),
    Difference(
        "lobpcg of float16: torch's Python code looks the dtype up in a table of float32 and "
        "float64 (KeyError); ember refuses it as a ValueError naming the dtypes it takes",
        CLASS, ("lobpcg",), ember="ValueError", torch="KeyError"),
    Difference(
        "a Python number beyond float16's range with a float16 tensor: torch casts it into "
        "float16 first (inf) and computes with inf (a floor division gives NaN); ember "
        "computes in float32 with the number (-inf there). Both round the result to float16",
        RESULT, ("div", "divide", "floor_divide", "remainder", "fmod", "true_divide"),
        source=r"(?=.*float16)(?=.*(2\*\*6[34]|\de\+?([5-9]|\d\d)|\d{6,}))"),
    Difference(
        "ldexp with int64 exponents beyond float's range: torch computes 2 ** other in int64, "
        "which overflows; ember computes it in the result's float dtype (0 or inf)",
        RESULT, ("ldexp",), source=r"\d{12,}"),
    Difference(
        "any/all into a uint8 out= of a floating input: torch computes in uint8, the input "
        "converted first (0.75 becomes 0: any([0.75, -0.75]) is 0); ember reduces the input "
        "and casts the bool result into out",
        RESULT, ("any", "all"), source=r"out=.*uint8"),
    Difference(
        "std/var of float16 or bfloat16 over every element: torch 2.13's all-element kernel has "
        "no half type (its per-dim one has); ember computes it, as along a dim",
        ACCEPTS, ("std", "var", "std_mean", "var_mean"), ember="ok",
        torch_message="std_var_all: Unsupported dtype"),
    Difference(
        "index_put with an empty list of indices: torch fails inside (its masked_fill path "
        "with an uninitialised mask); ember writes values over the whole tensor, as x[()] = v",
        ACCEPTS, ("index_put",), ember="ok", torch_message="nullptr \\(uninitialized\\)"),
    Difference(
        "a pooling stride, padding or kernel size beyond int32: torch's pooling kernels take "
        "them as 32-bit ints and refuse the conversion; ember's take int64 (a stride of 2**62 "
        "gives one window per dim)",
        ACCEPTS, ("max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d",
                  "avg_pool3d", "max_pool1d_with_indices", "max_pool2d_with_indices",
                  "max_pool3d_with_indices"), ember="ok",
        torch_message="cannot be converted to type int without overflow"),
    Difference(
        "the legacy Tensor(tensor, ...) constructor with more arguments: torch 2.13 reads a "
        "one-element integer tensor and the numbers after it as sizes (a negative one is its "
        "RuntimeError); ember's Tensor(...) takes sizes as ints or one sequence of data",
        CLASS, ("Tensor",), ember="TypeError", torch="RuntimeError",
        ember_message="data must be a sequence", torch_message="negative dimension"),
    Difference(
        "mv of mismatched sizes into a 0-d out=: torch's size-mismatch message reads the 0-d "
        "tensor's first size and fails there with an IndexError; ember reports the mismatch",
        CLASS, ("mv",), ember="RuntimeError", torch="IndexError",
        ember_message="size mismatch", torch_message="tensor has no dimensions"),
    Difference(
        "chunk with a count near 2**63: torch's ceil(size / chunks) overflows int64 and it "
        "refuses the negative split size; ember returns one piece per element",
        ACCEPTS, ("chunk",), ember="ok", torch_message="split_size=-"),
    Difference(
        "layer norm of a constant row with a tiny eps (rstd ~1e15): torch computes "
        "x * rstd - mean * rstd, whose rounding error rstd magnifies (2.5 -> 1e8 in bfloat16); "
        "ember computes (x - mean) * rstd, which is exactly 0 there",
        RESULT, ("native_layer_norm", "layer_norm"), source="eps=1e-[1-9][0-9]"),
    Difference(
        "expand of a tensor to a leading size 0 followed by -1: torch skips its checks of the "
        "later sizes and returns a tensor of size -1 (which then fails to convert); ember "
        "refuses the -1 in a new leading dim, as torch does when the leading size is not 0",
        CLASS, ("expand",), ember="RuntimeError", torch="ValueError",
        ember_message="isn't allowed in a leading, non-existing dimension",
        torch_message="negative dimensions are not allowed"),
    Difference(
        "a complex mean of an infinite value: torch divides the sum by the count as a complex "
        "number, (inf + 0j) / (1 + 0j) = inf + nanj; ember divides by the real count, inf + 0j "
        "(NumPy's answer)",
        RESULT, ("mean", "nanmean"), source="inf"),
    Difference(
        "ldexp of a real input by a 0-d exponent of another floating dtype: the precision of "
        "torch's power follows no promotion rule (double for a float64 input, the exponent's "
        "for a float32 one, float16 for a float16 input and a bfloat16 exponent); ember's is "
        "the exponent's dtype, as for an exponent of any other shape",
        RESULT, ("ldexp",), source=r"\.reshape\(\[\]\)\.to\(m\.(float|bfloat)"),
    Difference(
        "svd_lowrank of bfloat16: torch multiplies it by its float32 sketch and fails (m1 and m2 "
        "of different dtypes), except for some layouts of a rank-0 sketch, where the empty "
        "products pass; ember refuses bfloat16 in its QR, whatever q",
        REFUSES, ("svd_lowrank", "pca_lowrank"), ember="NotImplementedError",
        ember_message="not implemented for 'BFloat16'", source=r"bfloat16"),
    Difference(
        "diag_embed of an empty input with an offset near 2**31: torch's view of the diagonal "
        "overflows its storage offset (offset times a stride of ~2**32) and refuses it; ember "
        "returns the empty (N, ..., 0, N) result, which NumPy cannot hold (the fuzzer's "
        "conversion of it raises ValueError)",
        CLASS, ("diag_embed",), ember="ValueError", torch="RuntimeError",
        ember_message="array is too big", torch_message="invalid storage offset"),
    Difference(
        "prod of float16/bfloat16: torch multiplies in the 16-bit type, rounding after every "
        "step (bfloat16 -6.25 * -5 * ... * -2.5: 84992); ember multiplies in float32 and rounds "
        "once (86016, the correctly rounded 85830.69)",
        RESULT, ("prod",), source=r"to\(m\.(bfloat16|float16)\)"),
    Difference(
        "a shift or size of -2**63: torch reserves that int64 for its symbolic sizes and "
        "refuses it (SymIntArrayRef expected to contain only concrete integers); ember takes it "
        "as the number it is (roll by -2**63 is a roll by -2**63 mod n)",
        ACCEPTS, ("roll",), ember="ok", torch_message="only concrete integers"),
    Difference(
        "triu_indices/tril_indices with an offset near -2**63: torch's count of rows overflows "
        "int64 and it refuses a negative size; ember counts without overflow (every position)",
        ACCEPTS, ("triu_indices", "tril_indices"), ember="ok",
        torch_message="negative dimension"),
    Difference(
        "a factory with a size that is not an int and a dtype= other than out='s: torch reads "
        "the sizes lazily, after its out= dtype check (RuntimeError); ember's parser refuses "
        "the size first (TypeError), as both do without out=",
        CLASS, ("empty", "zeros", "ones", "rand", "randn", "full", "empty_strided"),
        ember="TypeError", torch="RuntimeError", ember_message="must be tuple of ints",
        torch_message="does not match dtype of out parameter"),
    Difference(
        _BATCH_NORM_1D,
        REFUSES, ("native_batch_norm", "batch_norm"), ember="RuntimeError",
        ember_message="expected input with at least 2 dims"),
    Difference(
        _BATCH_NORM_1D,
        CLASS, ("native_batch_norm", "batch_norm"), ember="RuntimeError", torch="IndexError",
        ember_message="expected input with at least 2 dims"),
    Difference(
        "svd_lowrank of an integer matrix with an niter that is not an int: torch's Python "
        "function reaches range(niter) (a TypeError) where the empty sketch lets its products "
        "pass; ember refuses the non-floating matrix first (torch's products refuse it too, "
        "wherever they are not empty)",
        CLASS, ("svd_lowrank", "pca_lowrank"), ember="RuntimeError", torch="TypeError",
        ember_message="expected a floating point tensor"),
    Difference(
        "repeat_interleave of an empty input by a count near 2**62: torch's expand-based "
        "kernel overflows computing the strides of the (.., 0, count, ..) view; ember returns "
        "the empty result",
        ACCEPTS, ("repeat_interleave",), ember="ok", torch_message="Stride calculation overflowed"),
    Difference(
        "add/sub with an alpha whose product with other overflows: ember's kernel fuses "
        "x + alpha * other into one rounding (FMA), so inf + (a huge finite product) stays inf; "
        "torch's scalar loop (fewer elements than a vector) rounds the product to inf first "
        "and gets inf - inf = NaN (its vector loop fuses as ember's does)",
        RESULT, ("add", "sub"), source=r"1e300"),  # (the alpha or the other: seed 619)
    Difference(
        "window functions with an infinite or huge alpha/beta: ember computes the window in "
        "float64 and rounds once (more accurate); torch computes it in the dtype, so the sign "
        "of float32 cos(pi/2)'s rounding error (-4.4e-8, against float64's +6.1e-17) decides "
        "whether beta * cos is +inf or -inf",
        RESULT, ("hamming_window", "hann_window", "blackman_window", "kaiser_window"),
        source=r"inf|e\+?[3-9][0-9]"),
    Difference(
        "the deprecated sub(other, alpha) overload with alpha = -2**63: torch negates alpha in "
        "int64, which wraps to -2**63 again (self + 2**64 * ...); ember subtracts alpha * "
        "other as written",
        RESULT, ("sub", "subtract"), source=r"-9223372036854775808"),
    Difference(
        "index_fill_ of an expanded empty tensor with indices: torch's kernel restrides the "
        "view and fails on its storage (setStorage ... out of bounds); ember reports the first "
        "index out of bounds of the empty dim (IndexError)",
        CLASS, ("index_fill",), ember="IndexError", torch="RuntimeError",
        torch_message="setStorage"),
    Difference(
        "the legacy Tensor(*sizes) with a one-element tensor or a bool among the sizes: an "
        "uninitialised tensor in both frameworks, whose values are whatever the memory held",
        RESULT, ("Tensor",), source=r"^m\.Tensor\(.*, (True|False|\d+)\)$"),
    Difference(
        "triu_indices/tril_indices whose offset near 2**63 overflows torch's count of rows "
        "(its negative-size RuntimeError); ember counts every position and asks for the memory "
        "they need (MemoryError where there is not enough)",
        CLASS, ("triu_indices", "tril_indices"), ember="MemoryError", torch="RuntimeError",
        torch_message="negative dimension"),
    Difference(
        "repeat/tile whose repeat times a dim's size overflows int64: torch's product wraps "
        "(4 * -2**62 is 0 in int64, so an empty result where the repeat was negative); ember "
        "refuses the overflow",
        REFUSES, ("repeat", "tile"), ember="RuntimeError", ember_message="overflow int64"),
]


def reason_for(name: str, kind: str, ours, theirs, source: str = "") -> str | None:
    """The reason a disagreement is deliberate, or None when it is not listed."""
    for d in DIFFERENCES:
        if d.matches(name, kind, ours, theirs, source):
            return d.reason
    return None
