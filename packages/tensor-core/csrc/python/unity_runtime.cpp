// unity_runtime.cpp: one translation unit for the bindings of creation, random, linear algebra, nn kernels, interop, storages and devices.
// The binding files are compiled in two such units (setup.py compiles these, not the files they
// include): every unit that includes pybind11 parses its headers and emits the code of their
// inline statics again, about 3.5 s of the 4-5 s each file took on its own. A new file of
// csrc/python/ goes into one of the two lists (setup.py refuses a file in none or in both).

#include "python/bind_creation.cpp"
#include "python/bind_random.cpp"
#include "python/bind_linalg.cpp"
#include "python/bind_lapack.cpp"
#include "python/bind_nn_kernels.cpp"
#include "python/bind_optim.cpp"
#include "python/bind_interop.cpp"
#include "python/bind_storage.cpp"
#include "python/bind_shared.cpp"
#include "python/bind_runtime.cpp"
#include "python/bind_cuda.cpp"
#include "python/bind_extension.cpp"
