// op_table.cpp - the name and kind of every op of op_table.h, in enum order (the kernels
// themselves are in ops/cpu/unary.cpp and binary.cpp).
#include "ops/op_table.h"

namespace ember {

static const OpInfoEntry kUnaryInfo[] = {
#define EMBER_INFO(name, kind, expr) {#name, 1, OpKind::kind, #kind},
    EMBER_UNARY_OPS(EMBER_INFO)
#undef EMBER_INFO
};
const OpInfoEntry& unary_info(UnaryOp op) { return kUnaryInfo[static_cast<int>(op)]; }
int num_unary_ops() { return static_cast<int>(sizeof(kUnaryInfo) / sizeof(kUnaryInfo[0])); }

static const OpInfoEntry kBinaryInfo[] = {
#define EMBER_INFO(name, kind, expr) {#name, 2, OpKind::kind, #kind},
    EMBER_BINARY_OPS(EMBER_INFO)
#undef EMBER_INFO
};
const OpInfoEntry& binary_info(BinaryOp op) { return kBinaryInfo[static_cast<int>(op)]; }
int num_binary_ops() { return static_cast<int>(sizeof(kBinaryInfo) / sizeof(kBinaryInfo[0])); }

namespace {
constexpr ComplexResult complex_result_of(const char* kind) {
  // COMPLEX, REAL, PRED / CMP / LOGICAL
  return kind[0] == 'C' && kind[1] == 'O' ? ComplexResult::Complex
         : kind[0] == 'R'                 ? ComplexResult::Real
                                          : ComplexResult::Bool;
}
}  // namespace

ComplexResult complex_unary_result(UnaryOp op) {
  switch (op) {
#define EMBER_CASE_(name, kind, expr) \
  case UnaryOp::name: return complex_result_of(#kind);
    EMBER_COMPLEX_UNARY_OPS(EMBER_CASE_)
#undef EMBER_CASE_
    default: return ComplexResult::None;
  }
}

bool exact_out_dtype(UnaryOp op) {
  switch (op) {
    case UnaryOp::floor: case UnaryOp::ceil: case UnaryOp::trunc: case UnaryOp::frac:
    case UnaryOp::neg: case UnaryOp::abs: case UnaryOp::sign: case UnaryOp::bitwise_not:
      return true;
    default:
      return false;
  }
}

ComplexResult complex_binary_result(BinaryOp op) {
  switch (op) {
#define EMBER_CASE_(name, kind, expr) \
  case BinaryOp::name: return complex_result_of(#kind);
    EMBER_COMPLEX_BINARY_OPS(EMBER_CASE_)
#undef EMBER_CASE_
    default: return ComplexResult::None;
  }
}

}  // namespace ember
