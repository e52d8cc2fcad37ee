"""ember.backends: settings and facts of the backends, under torch.backends' names.

``ember.backends.cpu.get_cpu_capability()`` tells which instruction set the CPU kernels run at.
"""

from ember.backends import cpu  # noqa: F401
