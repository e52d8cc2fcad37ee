"""ember.torch_version: ``TorchVersion``, the type of ``ember.__version__`` (torch's): a string
that compares as a PEP 440 version with strings, tuples and lists (``ember.__version__ >=
(0, 1)``), and as a plain string where the other side is no version (``"parrot"``)."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

__all__ = ["InvalidVersion", "TorchVersion"]

_PATTERN = re.compile(
    r"v?(?:(?P<epoch>\d+)!)?(?P<release>\d+(?:\.\d+)*)"
    r"(?:[-_.]?(?P<pre_l>a|alpha|b|beta|rc|c|pre|preview)[-_.]?(?P<pre_n>\d+)?)?"
    r"(?:-(?P<post_n1>\d+)|[-_.]?(?P<post_l>post|rev|r)[-_.]?(?P<post_n2>\d+)?)?"
    r"(?:[-_.]?(?P<dev_l>dev)[-_.]?(?P<dev_n>\d+)?)?"
    r"(?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?",
    re.IGNORECASE)
_PRE = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "c": 2, "rc": 2, "pre": 2, "preview": 2}


class InvalidVersion(ValueError):
    """A string that is not a PEP 440 version."""


def version_key(text: str) -> tuple:
    """The ordering key of a PEP 440 version (packaging's): epoch, release without trailing
    zeros, pre-release, post-release, development release, local label."""
    m = _PATTERN.fullmatch(text.strip())
    if m is None:
        raise InvalidVersion(f"Invalid version: '{text}'")
    release = [int(p) for p in m["release"].split(".")]
    while len(release) > 1 and release[-1] == 0:
        release.pop()
    pre = (_PRE[m["pre_l"].lower()], int(m["pre_n"] or 0)) if m["pre_l"] else None
    post_n = m["post_n1"] or m["post_n2"]
    post = int(post_n or 0) if (m["post_n1"] or m["post_l"]) else None
    dev = int(m["dev_n"] or 0) if m["dev_l"] else None
    if pre is None:  # a dev release of the final comes before its pre-releases
        pre = (-math.inf, 0) if post is None and dev is not None else (math.inf, 0)
    local = () if m["local"] is None else tuple(
        (int(p), "") if p.isdigit() else (-math.inf, p.lower())
        for p in re.split(r"[-_.]", m["local"]))
    return (int(m["epoch"] or 0), tuple(release), pre,
            -math.inf if post is None else post, math.inf if dev is None else dev, local)


def _key_of(other) -> tuple:
    if isinstance(other, str):
        return version_key(other)
    if isinstance(other, Iterable):
        return version_key(".".join(str(item) for item in other))
    raise InvalidVersion(f"not a version: {other!r}")


def _compare(name: str):
    def method(self, other):
        try:
            return getattr(version_key(self), name)(_key_of(other))
        except InvalidVersion:  # as torch's: an invalid version compares as a string
            return getattr(str, name)(self, other)
    method.__name__ = name
    return method


class TorchVersion(str):
    """A version string that compares as a version (torch.torch_version.TorchVersion)."""

    __gt__ = _compare("__gt__")
    __ge__ = _compare("__ge__")
    __lt__ = _compare("__lt__")
    __le__ = _compare("__le__")
    __eq__ = _compare("__eq__")
    __hash__ = str.__hash__  # (and str's !=, as torch's class keeps it)
