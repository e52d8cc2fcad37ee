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

}  // namespace ember
