import os
import sys

# The core's op database (packages/tensor-core/tests/opdb.py) drives the gradient tests.
_CORE_TESTS = os.path.join(os.path.dirname(__file__), "..", "..", "tensor-core", "tests")
if os.path.isdir(_CORE_TESTS) and _CORE_TESTS not in sys.path:
    sys.path.append(os.path.abspath(_CORE_TESTS))
