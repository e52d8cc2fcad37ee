"""ember.lobpcg (torch.lobpcg): extreme eigenpairs against NumPy's and SciPy's dense solvers,
the generalized problem, a preconditioner, batches, float32, and torch's argument errors."""

import numpy as np
import pytest

import ember


def spd(m, seed, shift=1.0):
    rng = np.random.default_rng(seed)
    M = rng.standard_normal((m, m))
    return M @ M.T + shift * np.eye(m)


@pytest.mark.parametrize("m,k,largest", [(12, 1, True), (20, 2, True), (20, 2, False),
                                         (60, 4, True), (90, 3, False)])
def test_extreme_eigenpairs_match_numpy(m, k, largest):
    A = spd(m, m)
    w = np.linalg.eigvalsh(A)
    ember.manual_seed(0)
    E, X = ember.lobpcg(ember.tensor(A), k=k, largest=largest)
    assert E.shape == (k,) and X.shape == (m, k) and E.dtype == ember.float64
    want = w[::-1][:k] if largest else w[:k]  # in torch's order: from the extreme inwards
    np.testing.assert_allclose(E.numpy(), want, rtol=1e-9)
    x = X.numpy()
    np.testing.assert_allclose(x.T @ x, np.eye(k), atol=1e-10)  # orthonormal
    residual = np.linalg.norm(A @ x - x * E.numpy(), axis=0)
    assert (residual <= 1e-6 * np.linalg.norm(A, 2)).all(), residual


def test_generalized_problem_preconditioner_batch_and_float32():
    scipy_linalg = pytest.importorskip("scipy.linalg")
    A, B = spd(30, 1), spd(30, 2, shift=30.0)
    E, X = ember.lobpcg(ember.tensor(A), k=2, B=ember.tensor(B))
    np.testing.assert_allclose(E.numpy(), scipy_linalg.eigh(A, B, eigvals_only=True)[::-1][:2],
                               rtol=1e-9)
    x = X.numpy()
    np.testing.assert_allclose(x.T @ B @ x, np.eye(2), atol=1e-9)  # B-orthonormal
    E, _ = ember.lobpcg(ember.tensor(A), k=2, iK=ember.tensor(np.linalg.inv(A)), largest=False)
    np.testing.assert_allclose(E.numpy(), np.linalg.eigvalsh(A)[:2], rtol=1e-9)
    batch = ember.stack([ember.tensor(A), ember.tensor(2 * A)])
    E, X = ember.lobpcg(batch, k=1)
    assert E.shape == (2, 1) and X.shape == (2, 30, 1)
    np.testing.assert_allclose(E.numpy()[:, 0], np.linalg.eigvalsh(A)[-1] * np.array([1, 2]),
                               rtol=1e-9)
    E, X = ember.lobpcg(ember.tensor(A).float(), k=2)
    assert E.dtype == ember.float32 and X.dtype == ember.float32
    np.testing.assert_allclose(E.numpy(), np.linalg.eigvalsh(A)[::-1][:2], rtol=1e-5)


def test_vector_counts_and_errors_as_torch():
    A = ember.tensor(spd(20, 3))
    X0 = ember.randn(20, 3, dtype=ember.float64)
    assert ember.lobpcg(A, X=X0)[0].shape == (3,)  # k from X
    E, X = ember.lobpcg(A, X=X0, k=2)
    assert E.shape == (2,) and X.shape == (20, 2)
    assert ember.lobpcg(A, n=3, k=2)[0].shape == (2,)
    with pytest.raises(ValueError, match=r"LOBPCG algorithm is not applicable when the number "
                                         r"of A rows \(=5\) is smaller than 3 x the number of "
                                         r"requested eigenpairs \(=2\)"):
        ember.lobpcg(ember.tensor(spd(5, 4)), k=2)
    with pytest.raises(ValueError, match="square"):
        ember.lobpcg(ember.ones(4, 5, dtype=ember.float64))
    with pytest.raises(NotImplementedError, match="tracker"):
        ember.lobpcg(A, k=1, tracker=lambda worker: None)
