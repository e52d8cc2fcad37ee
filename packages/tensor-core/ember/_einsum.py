"""ember.einsum and ember.tensordot, composed of core views, sums and bmm.

einsum evaluates its operands pairwise, left to right (as torch does without opt_einsum). Each
operand first loses its repeated labels (a diagonal view through as_strided) and the labels no
one else needs (a sum); each pair is then one batched GEMM: the shared labels that are still needed
become the batch dims, the shared ones that are not are contracted, and the rest are the rows of
the left and the columns of the right operand (permute + reshape, which copies only when the
layout demands it). So ``bij,bjk->bik`` is a single bmm on views. Being built from core ops, both
functions are differentiable through their parts.

>>> import ember
>>> a = ember.arange(6.0).reshape(2, 3)
>>> ember.einsum("ij->j", a)
tensor([3., 5., 7.])
>>> ember.einsum("ij,kj->ik", a, a)
tensor([[ 5., 14.],
        [14., 50.]])
"""

from __future__ import annotations

from ember import _C

_ELL = "..."


def _err(msg: str) -> RuntimeError:
    return RuntimeError(f"einsum(): {msg}")


def _parse_term(term: str, start: int, what: str):
    """Labels of one term: letters, and at most one '...' (returned as the string '...')."""
    labels = []
    i = 0
    while i < len(term):
        c = term[i]
        if c == ".":
            if _ELL in labels:
                raise _err(f"found '.' for {what} for which an ellipsis was already found")
            if term[i:i + 3] != _ELL:
                raise _err(f"found '.' for {what} that is not part of any ellipsis")
            labels.append(_ELL)
            i += 3
            continue
        if not ("a" <= c <= "z" or "A" <= c <= "Z"):
            raise _err(f"invalid subscript given at index {start + i} in the equation string, "
                       f"subscripts must be in [a-zA-Z]")
        labels.append(c)
        i += 1
    return labels


def _sort_key(label: str) -> int:
    return ord(label) - ord("A") if label <= "Z" else 26 + ord(label) - ord("a")


def _parse(equation: str, operands):
    eq = equation.replace(" ", "")
    arrow = eq.find("->")
    lhs = eq if arrow < 0 else eq[:arrow]
    terms, pos = [], 0
    for t in lhs.split(","):
        terms.append((t, pos))
        pos += len(t) + 1
    if len(terms) > len(operands):
        raise _err("fewer operands were provided than specified in the equation")
    if len(terms) < len(operands):
        raise _err("more operands were provided than specified in the equation")
    inputs = []
    ell_ndim = 0
    for k, ((term, start), op) in enumerate(zip(terms, operands)):
        labels = _parse_term(term, start, f"operand {k}")
        nd = len(op.shape)
        if _ELL in labels:
            n = len(labels) - 1
            if n > nd:
                raise _err(f"the number of subscripts in the equation ({n}) is more than the "
                           f"number of dimensions ({nd}) for operand {k}")
            ell_ndim = max(ell_ndim, nd - n)
        elif len(labels) != nd:
            raise _err(f"the number of subscripts in the equation ({len(labels)}) does not match "
                       f"the number of dimensions ({nd}) for operand {k} and no ellipsis was given")
        inputs.append(labels)
    # Expand each '...' into named broadcast dims, right-aligned across operands.
    ell = [f"...{i}" for i in range(ell_ndim)]
    expanded = []
    for labels, op in zip(inputs, operands):
        if _ELL in labels:
            e = len(op.shape) - (len(labels) - 1)
            i = labels.index(_ELL)
            labels = labels[:i] + ell[ell_ndim - e:] + labels[i + 1:]
        expanded.append(labels)
    seen = [lab for labels in inputs for lab in labels if lab != _ELL]
    if arrow >= 0:
        out = _parse_term(eq[arrow + 2:], arrow + 2, "the output")
        output = []
        for lab in out:
            if lab == _ELL:
                output.extend(ell)
                continue
            if lab not in seen:
                raise _err(f"output subscript {lab} does not appear in the equation for any "
                           f"input operand")
            if lab in output:
                raise _err(f"output subscript {lab} appears more than once in the output")
            output.append(lab)
    else:
        once = sorted((lab for lab in set(seen) if seen.count(lab) == 1), key=_sort_key)
        output = ell + once
    return expanded, output


def _diagonalize(t, labels, k):
    """Merges repeated labels of one operand into one dim (the diagonal, as a view)."""
    if len(set(labels)) == len(labels):
        return t, labels
    sizes, groups, uniq = [], [], []
    shape = t.shape
    for d, lab in enumerate(labels):
        if lab in uniq:
            j = uniq.index(lab)
            if sizes[j] != shape[d]:
                raise _err(f"subscript {lab} is repeated for operand {k} but the sizes don't "
                           f"match, {shape[d]} != {sizes[j]}")
            groups[j].append(d)
        else:
            uniq.append(lab)
            sizes.append(shape[d])
            groups.append([d])
    return t.merge_dims(tuple(sizes), tuple(tuple(g) for g in groups)), uniq


def _merge_dims(t, sizes, groups):
    """The view of t in which each group of equal-sized dims becomes one dim (its diagonal)."""
    stride = t.stride()
    return t.as_strided(sizes, [sum(stride[d] for d in g) for g in groups], t.storage_offset())


class _Sym:
    """A stand-in for an operand while an einsum plan is built: it tracks the shape and records
    each op, so that the same ops can be replayed on tensors of the same shapes (_Plan)."""

    __slots__ = ("shape", "slot", "steps")

    def __init__(self, shape, slot, steps):
        self.shape, self.slot, self.steps = tuple(shape), slot, steps

    def _emit(self, shape, name, args=(), other=None):
        out = _Sym(shape, len(self.steps) + 10_000_000, self.steps)
        self.steps.append((name, self.slot, other.slot if other is not None else None, args,
                           out.slot))
        return out

    def merge_dims(self, sizes, groups):
        return self._emit(sizes, "merge", (sizes, groups))

    def sum(self, dims, keepdim=False):
        ds = [dims] if isinstance(dims, int) else list(dims)
        nd = len(self.shape)
        ds = [d % nd for d in ds]
        shape = [1 if d in ds else s for d, s in enumerate(self.shape)] if keepdim else \
            [s for d, s in enumerate(self.shape) if d not in ds]
        return self._emit(shape, "sum", (dims, keepdim))

    def permute(self, order):
        return self._emit([self.shape[d] for d in order], "permute", (tuple(order),))

    def expand(self, shape):
        return self._emit(shape, "expand", (tuple(shape),))

    def reshape(self, *shape):
        shape = tuple(shape[0]) if len(shape) == 1 and not isinstance(shape[0], int) else shape
        return self._emit(shape, "reshape", (tuple(shape),))

    def unsqueeze(self, d):
        shape = list(self.shape)
        shape.insert(d % (len(shape) + 1), 1)
        return self._emit(shape, "unsqueeze", (d,))

    def bmm(self, other):
        return self._emit((self.shape[0], self.shape[1], other.shape[2]), "bmm", (), other)


def _replay(steps, result_slot, operands):
    vals = dict(enumerate(operands))
    for name, src, other, args, out in steps:
        t = vals[src]
        if name == "merge":
            vals[out] = _merge_dims(t, *args)
        elif name == "bmm":
            vals[out] = t.bmm(vals[other])
        elif name == "sum":
            vals[out] = t.sum(args[0], keepdim=args[1])
        else:
            vals[out] = getattr(t, name)(*args)
    return vals[result_slot]


def _sum_out(t, labels, needed):
    dims = [d for d, lab in enumerate(labels) if lab not in needed]
    if not dims:
        return t, labels
    return t.sum(dims), [lab for lab in labels if lab in needed]


def _from_sublists(args):
    """(equation, operands) for torch's sublist form of einsum."""
    def term(sub):
        # torch's Python parser of sublists, operation for operation, so that a subscript of
        # another type fails as there: a tensor through its comparisons' truth value or its
        # __index__, a float in chr(), a non-sequence in the iteration
        out = []
        for x in sub:
            if x is Ellipsis:
                out.append(_ELL)
            elif x >= 0 and x < 26:
                out.append(chr(ord("A") + x))
            elif x >= 26 and x < 52:
                out.append(chr(ord("a") + x - 26))
            else:
                raise ValueError("einsum(): subscript in subscript list is not within the valid "
                                 "range [0, 52)")
        return "".join(out)

    operands = args[0::2][:len(args) // 2]
    terms = [term(sub) for sub in args[1::2][:len(args) // 2]]
    eq = ",".join(terms)
    if len(args) % 2:
        eq += "->" + term(args[-1])
    return eq, tuple(operands)


def _numel(sizes) -> int:
    n = 1
    for s in sizes:
        n *= s
    return n


def _contract(a, la, b, lb, keep):
    """The product of two labelled operands, summing their shared labels not in `keep`."""
    sa = dict(zip(la, a.shape))
    sb = dict(zip(lb, b.shape))
    batch = [lab for lab in la if lab in sb and lab in keep]
    summed = [lab for lab in la if lab in sb and lab not in keep]
    rows = [lab for lab in la if lab not in sb]
    cols = [lab for lab in lb if lab not in sa]
    # Size-1 dims broadcast: a contracted label of size 1 on one side is summed on the other.
    for lab in summed:
        if sa[lab] != sb[lab]:
            if sa[lab] == 1:
                b = b.sum(lb.index(lab), keepdim=True)
                sb[lab] = 1
            else:
                a = a.sum(la.index(lab), keepdim=True)
                sa[lab] = 1
    bsz = [max(sa[lab], sb[lab]) for lab in batch]
    a = a.permute([la.index(lab) for lab in batch + rows + summed])
    b = b.permute([lb.index(lab) for lab in batch + summed + cols])
    if any(sa[lab] != s for lab, s in zip(batch, bsz)):
        a = a.expand(bsz + list(a.shape[len(batch):]))
    if any(sb[lab] != s for lab, s in zip(batch, bsz)):
        b = b.expand(bsz + list(b.shape[len(batch):]))
    nb, nr = _numel(bsz), _numel(sa[lab] for lab in rows)
    nk, nc = _numel(sa[lab] for lab in summed), _numel(sb[lab] for lab in cols)
    r = a.reshape(nb, nr, nk).bmm(b.reshape(nb, nk, nc))
    r = r.reshape(bsz + [sa[lab] for lab in rows] + [sb[lab] for lab in cols])
    return r, batch + rows + cols


def einsum(*args):
    """Einstein summation over the operands (given as arguments or as one list), like
    torch.einsum: explicit (``->``) or implicit output, ``...``, repeated and summed labels."""
    equation, operands = (args[0], args[1:]) if args else (None, ())
    if isinstance(equation, _C.Tensor) and operands:  # sublists: einsum(a, [0, 1], b, [1, 2])
        equation, operands = _from_sublists((equation,) + operands)
    elif operands and not isinstance(equation, (str, _C.Tensor)):  # (alone: the ValueError)
        raise TypeError(f"einsum(): argument 'equation' (position 1) must be str, not "
                        f"{type(equation).__name__}")
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:  # torch's Python wrapper's ValueError
        raise ValueError("einsum(): must specify the equation string and at least one operand, "
                         "or at least one operand and its subscripts list")
    for i, op in enumerate(operands):
        if not isinstance(op, _C.Tensor):
            raise TypeError(f"einsum(): argument 'operands' must be tuple of Tensors, but found "
                            f"element of type {type(op).__name__} at pos {i}")
    key = (equation, tuple(tuple(op.shape) for op in operands))
    plan = _PLANS.get(key)
    if plan is None:
        plan = _plan(equation, operands)
        if len(_PLANS) >= 512:
            _PLANS.clear()
        _PLANS[key] = plan
    return _replay(plan[0], plan[1], operands)


# Plans by (equation, operand shapes): the parsing and the shape logic run once per such key.
_PLANS: dict = {}


def _plan(equation, operands):
    """Runs the einsum algorithm on shape-only stand-ins: (steps, result slot) to replay."""
    steps: list = []
    syms = [_Sym(op.shape, i, steps) for i, op in enumerate(operands)]
    inputs, output = _parse(equation, syms)
    ops = [_diagonalize(op, labels, k) for k, (labels, op) in enumerate(zip(inputs, syms))]
    # Sizes must agree, up to broadcasting of size-1 dims.
    sizes = {}
    for k, (op, labels) in enumerate(ops):
        for lab, s in zip(labels, op.shape):
            prev = sizes.get(lab)
            if prev is None or prev == 1:
                sizes[lab] = s
            elif s != 1 and s != prev:
                name = "..." if lab.startswith("...") else lab
                raise _err(f"subscript {name} has size {s} for operand {k} which does not "
                           f"broadcast with previously seen size {prev}")
    out_set = set(output)
    t, lt = ops[0]
    for i in range(1, len(ops)):
        later = set(out_set)
        for _, lr in ops[i + 1:]:
            later.update(lr)
        b, lb = ops[i]
        t, lt = _sum_out(t, lt, later | set(lb))
        b, lb = _sum_out(b, lb, later | set(lt))
        t, lt = _contract(t, lt, b, lb, later)
    t, lt = _sum_out(t, lt, out_set)
    # Output labels missing from the result can only be broadcast dims of size 1 (or '...').
    for lab in output:
        if lab not in lt:
            t, lt = t.unsqueeze(-1), lt + [lab]
    perm = [lt.index(lab) for lab in output]
    if perm != list(range(len(perm))):
        t = t.permute(perm)
    shape = [sizes[lab] for lab in output]
    if list(t.shape) != shape:
        t = t.expand(shape)
    return steps, t.slot


def tensordot(a, b, dims=2, out=None):
    """Sums the products of a's and b's elements over the dims `dims`: an int n (the last n of
    a with the first n of b) or a pair of dim lists."""
    from ember._shape import _int_list

    # torch's order: dims read first (tensordot's Python body), then its core op's parser checks
    # every argument's type, then the op checks the values
    if not isinstance(dims, (tuple, list, _C.Tensor, int)):
        raise RuntimeError("tensordot expects dims to be int or tuple[list[int], list[int]] or "
                           f"list[list[int]] containing two lists, but got dims={dims}")
    if isinstance(dims, (tuple, list)):
        da, db = dims  # (Python's ValueError for another length, as torch's)
    elif isinstance(dims, _C.Tensor) and dims.numel() > 1:
        if dims.shape[0] != 2:
            raise RuntimeError(f"dims tensor must have size 2 in first dimension, got "
                               f"{dims.shape[0]}")
        da, db = dims[0].tolist(), dims[1].tolist()
    else:
        n = int(dims.item()) if isinstance(dims, _C.Tensor) else dims
        if n < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if not isinstance(dims, _C.Tensor) and all(isinstance(t, _C.Tensor) for t in (a, b)) \
                and n > min(a.dim(), b.dim()):
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        da, db = list(range(-n, 0)), list(range(n))
    for name, position, value in (("self", 1, a), ("other", 2, b)):
        if not isinstance(value, _C.Tensor):
            raise TypeError(f"tensordot(): argument '{name}' (position {position}) must be "
                            f"Tensor, not {type(value).__name__}")
    da = _int_list("tensordot", "dims_self", 3, da)
    db = _int_list("tensordot", "dims_other", 4, db)
    if out is not None and not isinstance(out, _C.Tensor):
        raise TypeError(f"tensordot(): argument 'out' must be Tensor, not {type(out).__name__}")
    if len(da) != len(db):
        raise RuntimeError("both dimension lists should have same length")
    if a.dtype != b.dtype:
        raise RuntimeError("both inputs should have same dtype")
    if a.dtype in (_C.uint16, _C.uint32, _C.uint64):  # (torch's products and sums lack them)
        raise NotImplementedError(f'"addmm_impl_cpu_" not implemented for '
                                  f"'{a.dtype._torch_name}'")
    na, nb = a.dim(), b.dim()
    ca, cb, sum_a, sum_b = [], [], [], []
    for x, y in zip(da, db):
        if not -na <= x < max(na, 1) or not -nb <= y < max(nb, 1):
            raise IndexError(f"Dimension out of range (got {x if not -na <= x < na else y})")
        if a.shape[x] != b.shape[y]:
            # torch's: a contracted dim of size 1 broadcasts against the other side's, whose
            # entries then sum (summed first here, so that both sides have size 1)
            if a.shape[x] != 1 and b.shape[y] != 1:
                raise RuntimeError(f"contracted dimensions need to match, but first has size "
                                   f"{a.shape[x]} in dim {x} and second has size {b.shape[y]} "
                                   f"in dim {y}")
            if b.shape[y] == 1:
                sum_a.append(x % na)
            else:
                sum_b.append(y % nb)
        ca.append(x % na)
        cb.append(y % nb)
    if len(set(ca)) != len(ca) or len(set(cb)) != len(cb):
        raise RuntimeError("tensordot: a dim appears multiple times in the list of dims")
    if sum_a:  # (in the inputs' dtype, as torch's: an integer sum stays int16)
        a = a.sum(sum_a, keepdim=True, dtype=a.dtype)
    if sum_b:
        b = b.sum(sum_b, keepdim=True, dtype=b.dtype)
    fa = [d for d in range(na) if d not in ca]
    fb = [d for d in range(nb) if d not in cb]
    k = _numel(a.shape[d] for d in ca)
    am = a.permute(fa + ca).reshape(_numel(a.shape[d] for d in fa), k)
    bm = b.permute(cb + fb).reshape(k, _numel(b.shape[d] for d in fb))
    shape = [a.shape[d] for d in fa] + [b.shape[d] for d in fb]
    r = am.mm(bm).reshape(shape)
    if out is not None:
        return _C._linalg_write_out("tensordot", r, out)
    return r
