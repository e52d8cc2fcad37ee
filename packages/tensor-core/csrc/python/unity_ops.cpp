// unity_ops.cpp: one translation unit for the bindings of the module, the binding layer's helpers, the op registry and the ops' bindings.
// The binding files are compiled in two such units (setup.py compiles these, not the files they
// include): every unit that includes pybind11 parses its headers and emits the code of their
// inline statics again, about 3.5 s of the 4-5 s each file took on its own. A new file of
// csrc/python/ goes into one of the two lists (setup.py refuses a file in none or in both).

#include "python/module.cpp"
#include "python/pyutils.cpp"
#include "python/schema.cpp"
#include "python/registry.cpp"
#include "python/bind_tensor.cpp"
#include "python/bind_ops.cpp"
#include "python/bind_reductions.cpp"
#include "python/bind_sort.cpp"
#include "python/bind_indexing.cpp"
#include "python/bind_shape.cpp"
#include "python/bind_aliases.cpp"
#include "python/bind_autograd.cpp"
