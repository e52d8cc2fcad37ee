"""Wrong Python types given to the registered nn kernels, LAPACK primitives and fused optimizer
steps: each raises TypeError naming the op and the argument, as torch's argument parser does; where
torch is installed and has the op (or its public form with the same parameter), torch raises the
same class."""

import pytest

import ember


def _x(*shape):
    return ember.randn(*shape, dtype=ember.float64)


def _tx(torch, *shape):
    return torch.randn(*shape, dtype=torch.float64)


def _spd(n=3):
    a = ember.randn(n, n, dtype=ember.float64)
    return a @ a.mT + ember.eye(n, dtype=ember.float64) * n


# (id, the ember call, the torch call or None where torch has no such op, the message's start)
CASES = [
    # convolution
    ("convolution-int-stride",
     lambda: ember.convolution(_x(1, 2, 5, 5), _x(3, 2, 3, 3), None, 1, [0], [1], False, [0], 1),
     lambda t: t.convolution(_tx(t, 1, 2, 5, 5), _tx(t, 3, 2, 3, 3), None, 1, [0], [1], False,
                             [0], 1),
     "convolution(): argument 'stride' (position 4) must be tuple of ints, not int"),
    ("conv2d-str-stride",
     lambda: ember.conv2d(_x(1, 2, 5, 5), _x(3, 2, 3, 3), stride="a"),
     lambda t: t.conv2d(_tx(t, 1, 2, 5, 5), _tx(t, 3, 2, 3, 3), stride="a"),
     "conv2d() received an invalid combination of arguments"),
    ("conv2d-float-padding",
     lambda: ember.conv2d(_x(1, 2, 5, 5), _x(3, 2, 3, 3), padding=1.5),
     lambda t: t.conv2d(_tx(t, 1, 2, 5, 5), _tx(t, 3, 2, 3, 3), padding=1.5),
     "conv2d() received an invalid combination of arguments"),
    ("conv1d-str-weight",
     lambda: ember.conv1d(_x(1, 2, 5), "w"),
     lambda t: t.conv1d(_tx(t, 1, 2, 5), "w"),
     "conv1d() received an invalid combination of arguments"),
    ("conv_transpose2d-float-groups",
     lambda: ember.conv_transpose2d(_x(1, 2, 5, 5), _x(2, 3, 3, 3), groups=1.0),
     lambda t: t.conv_transpose2d(_tx(t, 1, 2, 5, 5), _tx(t, 2, 3, 3, 3), groups=1.0),
     "conv_transpose2d(): argument 'groups' must be int, not float"),
    # pooling
    ("max_pool2d-return_indices",
     lambda: ember.max_pool2d(_x(1, 2, 4, 4), 2, return_indices=True),
     lambda t: t.max_pool2d(_tx(t, 1, 2, 4, 4), 2, return_indices=True),
     "max_pool2d() got an unexpected keyword argument 'return_indices'"),
    ("max_pool2d-str-kernel",
     lambda: ember.max_pool2d(_x(1, 2, 4, 4), "2"),
     lambda t: t.max_pool2d(_tx(t, 1, 2, 4, 4), "2"),
     "max_pool2d(): argument 'kernel_size' (position 2) must be tuple of ints, not str"),
    ("max_pool2d_with_indices-int-ceil_mode",
     lambda: ember.max_pool2d_with_indices(_x(1, 2, 4, 4), 2, ceil_mode=1),
     lambda t: t._C._nn.max_pool2d_with_indices(_tx(t, 1, 2, 4, 4), 2, ceil_mode=1),
     "max_pool2d_with_indices(): argument 'ceil_mode' must be bool, not int"),
    ("avg_pool1d-divisor_override",
     lambda: ember.avg_pool1d(_x(1, 2, 5), 2, divisor_override=1),
     lambda t: t.avg_pool1d(_tx(t, 1, 2, 5), 2, divisor_override=1),
     "avg_pool1d() got an unexpected keyword argument 'divisor_override'"),
    ("avg_pool2d-str-ceil_mode",
     lambda: ember.avg_pool2d(_x(1, 2, 4, 4), 2, ceil_mode="yes"),
     lambda t: t._C._nn.avg_pool2d(_tx(t, 1, 2, 4, 4), 2, ceil_mode="yes"),
     "avg_pool2d(): argument 'ceil_mode' must be bool, not str"),
    ("adaptive_avg_pool2d-none-entry",
     lambda: ember.adaptive_avg_pool2d(_x(1, 2, 5, 6), (None, 3)),
     lambda t: t._C._nn.adaptive_avg_pool2d(_tx(t, 1, 2, 5, 6), (None, 3)),
     "adaptive_avg_pool2d(): argument 'output_size' (position 2) must be tuple of ints"),
    ("adaptive_max_pool2d-float-size",
     lambda: ember.adaptive_max_pool2d(_x(1, 2, 5, 6), 2.0),
     lambda t: t._C._nn.adaptive_max_pool2d(_tx(t, 1, 2, 5, 6), 2.0),
     "adaptive_max_pool2d(): argument 'output_size' (position 2) must be tuple of ints, not float"),
    # nll_loss (ember also takes the reduction by name)
    ("nll_loss-float-reduction",
     lambda: ember.nll_loss(_x(3, 4), ember.tensor([0, 1, 2]), reduction=1.5),
     lambda t: t._C._nn.nll_loss(_tx(t, 3, 4), t.tensor([0, 1, 2]), reduction=1.5),
     "nll_loss() received an invalid combination of arguments"),
    ("nll_loss-str-ignore_index",
     lambda: ember.nll_loss(_x(3, 4), ember.tensor([0, 1, 2]), ignore_index="a"),
     lambda t: t._C._nn.nll_loss(_tx(t, 3, 4), t.tensor([0, 1, 2]), ignore_index="a"),
     "nll_loss() received an invalid combination of arguments"),
    ("nll_loss_backward-list-target",
     lambda: ember.nll_loss_backward(ember.tensor(1.0, dtype=ember.float64), _x(3, 4), [0, 1, 2]),
     None,
     "nll_loss_backward(): argument 'target' (position 3) must be Tensor, not list"),
    # normalization, embedding
    ("native_batch_norm-str-training",
     lambda: ember.native_batch_norm(_x(2, 3), None, None, None, None, "yes", 0.1, 1e-5),
     lambda t: t.native_batch_norm(_tx(t, 2, 3), None, None, None, None, "yes", 0.1, 1e-5),
     "native_batch_norm(): argument 'training' (position 6) must be bool, not str"),
    ("native_batch_norm-none-momentum",
     lambda: ember.native_batch_norm(_x(2, 3), None, None, None, None, True, None, 1e-5),
     lambda t: t.native_batch_norm(_tx(t, 2, 3), None, None, None, None, True, None, 1e-5),
     "native_batch_norm(): argument 'momentum' (position 7) must be float, not NoneType"),
    ("native_layer_norm-float-shape",
     lambda: ember.native_layer_norm(_x(2, 3), 3.0, None, None, 1e-5),
     lambda t: t.native_layer_norm(_tx(t, 2, 3), 3.0, None, None, 1e-5),
     "native_layer_norm(): argument 'normalized_shape' (position 2) must be tuple of ints"),
    ("native_batch_norm_backward-mask",
     lambda: ember.native_batch_norm_backward(_x(2, 3), _x(2, 3), None, None, None, _x(3),
                                              _x(3), True, 1e-5, "abc"),
     None,
     "native_batch_norm_backward(): argument 'output_mask' must be a list or tuple of 3 bools"),
    ("embedding-list-indices",
     lambda: ember.embedding(_x(4, 2), [1, 2]),
     lambda t: t.embedding(_tx(t, 4, 2), [1, 2]),
     "embedding(): argument 'indices' (position 2) must be Tensor, not list"),
    ("embedding-float-padding_idx",
     lambda: ember.embedding(_x(4, 2), ember.tensor([1]), padding_idx=1.0),
     lambda t: t.embedding(_tx(t, 4, 2), t.tensor([1]), padding_idx=1.0),
     "embedding(): argument 'padding_idx' must be int, not float"),
    ("embedding_dense_backward-float-num_weights",
     lambda: ember.embedding_dense_backward(_x(2, 3), ember.tensor([0, 1]), 4.0, -1, False),
     None,
     "embedding_dense_backward(): argument 'num_weights' (position 3) must be int, not float"),
    # fused RNN cells (torch binds these as aten ops only)
    ("_thnn_fused_lstm_cell-str-cx",
     lambda: ember._C._thnn_fused_lstm_cell(_x(2, 8), _x(2, 8), "cx"),
     None,
     "_thnn_fused_lstm_cell(): argument 'cx' (position 3) must be Tensor, not str"),
    ("_thnn_fused_gru_cell_backward-str-has_bias",
     lambda: ember._C._thnn_fused_gru_cell_backward(_x(2, 2), _x(2, 10), "yes"),
     None,
     "_thnn_fused_gru_cell_backward(): argument 'has_bias' (position 3) must be bool, not str"),
    # LAPACK primitives, against torch's private op or its public linalg form
    ("_linalg_svd-str-full_matrices",
     lambda: ember._C._linalg_svd(_x(3, 3), full_matrices="no"),
     lambda t: t._linalg_svd(_tx(t, 3, 3), full_matrices="no"),
     "_linalg_svd(): argument 'full_matrices' must be bool, not str"),
    ("_linalg_eigh-int-UPLO",
     lambda: ember._C._linalg_eigh(_spd(), UPLO=1),
     lambda t: t._linalg_eigh(_tx(t, 3, 3), UPLO=1),
     "_linalg_eigh(): argument 'UPLO' must be str, not int"),
    ("_linalg_det-list",
     lambda: ember._C._linalg_det([1.0]),
     lambda t: t._linalg_det([1.0]),
     "_linalg_det(): argument 'A' (position 1) must be Tensor, not list"),
    ("_linalg_inv_ex-str-check_errors",
     lambda: ember._C._linalg_inv_ex(_spd(), check_errors="x"),
     lambda t: t.linalg.inv_ex(_tx(t, 3, 3), check_errors="x"),
     "_linalg_inv_ex(): argument 'check_errors' must be bool, not str"),
    ("_linalg_qr-int-mode",
     lambda: ember._C._linalg_qr(_x(3, 3), mode=1),
     lambda t: t.linalg.qr(_tx(t, 3, 3), mode=1),
     "_linalg_qr(): argument 'mode' must be str, not int"),
    ("_linalg_cholesky_ex-int-upper",
     lambda: ember._C._linalg_cholesky_ex(_spd(), upper=1),
     lambda t: t.linalg.cholesky_ex(_tx(t, 3, 3), upper=1),
     "_linalg_cholesky_ex(): argument 'upper' must be bool, not int"),
    ("_linalg_lstsq-str-rcond",
     lambda: ember._C._linalg_lstsq(_x(3, 3), _x(3, 2), rcond="x"),
     lambda t: t.linalg.lstsq(_tx(t, 3, 3), _tx(t, 3, 2), rcond="x"),
     "_linalg_lstsq(): argument 'rcond' must be float, not str"),
    ("_linalg_solve_triangular-no-upper",
     lambda: ember._C._linalg_solve_triangular(_x(3, 3), _x(3, 2)),
     lambda t: t.linalg.solve_triangular(_tx(t, 3, 3), _tx(t, 3, 2)),
     "_linalg_solve_triangular() missing 1 required positional arguments: \"upper\""),
    ("_linalg_lu_solve-str-adjoint",
     lambda: ember._C._linalg_lu_solve(*ember.linalg.lu_factor(_spd()), _x(3, 2), adjoint="x"),
     lambda t: t.linalg.lu_solve(*t.linalg.lu_factor(_tx(t, 3, 3)), _tx(t, 3, 2), adjoint="x"),
     "_linalg_lu_solve(): argument 'adjoint' must be bool, not str"),
    ("_cholesky_solve-str-upper",
     lambda: ember._C._cholesky_solve(_x(3, 2), _spd(), upper="x"),
     lambda t: t.cholesky_solve(_tx(t, 3, 2), _tx(t, 3, 3), upper="x"),
     "_cholesky_solve(): argument 'upper' must be bool, not str"),
    # fused optimizer steps (ember's own kernels)
    ("_fused_sgd_-str-lr",
     lambda: ember._C._fused_sgd_([_x(3)], [_x(3)], None, [True], lr="x", weight_decay=0.0,
                                  momentum=0.0, dampening=0.0, nesterov=False, maximize=False),
     None,
     "_fused_sgd_(): argument 'lr' must be float, not str"),
    ("_fused_sgd_-int-first",
     lambda: ember._C._fused_sgd_([_x(3)], [_x(3)], None, [1], lr=0.1, weight_decay=0.0,
                                  momentum=0.0, dampening=0.0, nesterov=False, maximize=False),
     None,
     "_fused_sgd_(): argument 'first' must be a list or tuple of bools"),
    ("_fused_adam_-tensor-grads",
     lambda: ember._C._fused_adam_([_x(3)], _x(3), [_x(3)], [_x(3)], None, [ember.tensor(0.0)], lr=0.1,
                                   beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0,
                                   amsgrad=False, maximize=False, decoupled=False),
     None,
     "_fused_adam_(): argument 'grads' (position 2) must be tuple of Tensors, not Tensor"),
]


@pytest.mark.parametrize("ember_call,torch_call,message", [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_wrong_types_raise_torchs_type_error(ember_call, torch_call, message):
    with pytest.raises(TypeError) as info:
        ember_call()
    assert str(info.value).startswith(message), str(info.value)


@pytest.mark.parametrize("torch_call", [c[2] for c in CASES if c[2] is not None],
                         ids=[c[0] for c in CASES if c[2] is not None])
def test_torch_raises_the_same_class(torch_call):
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError):
        torch_call(torch)
