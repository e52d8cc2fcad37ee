// optim_kernels.h: fused optimizer updates (ember.optim's hot path).
//
// One call updates every parameter of a group: the tensor lists are walked as one flat range of
// elements, split across threads by parallel_for, so a step costs one kernel launch instead of a
// handful of elementwise ops per parameter (each a full pass over memory). All tensors of one
// parameter (param, grad, state buffers) must be tensors of the same device, floating dtype and
// size, and all but the gradient contiguous (a strided gradient is copied first); the Python
// side falls back to composed in-place ops when they are not. The kernels here run on the CPU;
// the checks and Adam's scalars serve the CUDA form too (ember/cuda/_optim_ops.py).
#pragma once
#include <vector>

#include "core/tensor.h"

namespace ember {

// torch.optim.SGD's update. `bufs` holds the momentum buffers (ignored when momentum == 0);
// `first[i]` marks a buffer that is initialised from the gradient on this step (buf = g).
void fused_sgd_(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                const std::vector<Tensor>& bufs, const std::vector<bool>& first, double lr,
                double weight_decay, double momentum, double dampening, bool nesterov,
                bool maximize);

// torch.optim.Adam / AdamW's update. `steps` are 0-d float tensors, incremented here.
// `decoupled` selects AdamW's weight decay (p *= 1 - lr * wd) over Adam's (g += wd * p).
void fused_adam_(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                 const std::vector<Tensor>& exp_avgs, const std::vector<Tensor>& exp_avg_sqs,
                 const std::vector<Tensor>& max_exp_avg_sqs, const std::vector<Tensor>& steps,
                 double lr, double beta1, double beta2, double eps, double weight_decay,
                 bool amsgrad, bool maximize, bool decoupled);

// Their checks, on any device (every tensor on params[0]'s device), with the kernels' errors.
void check_fused_sgd(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                     const std::vector<Tensor>& bufs, const std::vector<bool>& first,
                     double momentum);
void check_fused_adam(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                      const std::vector<Tensor>& exp_avgs,
                      const std::vector<Tensor>& exp_avg_sqs,
                      const std::vector<Tensor>& max_exp_avg_sqs,
                      const std::vector<Tensor>& steps, bool amsgrad);
// Increments Adam's step counters (checked first) and returns each parameter's step size
// lr / (1 - beta1^step) and sqrt(1 - beta2^step), in double, as pairs.
std::vector<double> adam_step_scalars(const std::vector<Tensor>& steps, double lr, double beta1,
                                      double beta2);

}  // namespace ember
