#include "python/pyutils.h"

namespace ember::pyb {
void register_linalg(py::module_& m) { (void)m; }
}  // namespace ember::pyb
