"""ember.utils is a namespace of ember-tensor that other distributions add to (ember-data)."""

import importlib.util

import pytest

import ember


def test_utils_data_is_lazy_and_names_its_distribution():
    if importlib.util.find_spec("ember.utils.data") is not None:
        assert ember.utils.data.DataLoader.__name__ == "DataLoader"
    else:
        with pytest.raises(ImportError, match=r"pip install \./packages/data .*ember-data"):
            ember.utils.data  # noqa: B018
    with pytest.raises(AttributeError):
        ember.utils.no_such_thing  # noqa: B018


@pytest.mark.parametrize("attr, folder, dist", [
    ("multiprocessing", "mp", "ember-mp"), ("nn", "nn", "ember-nn"),
    ("autograd", "autograd", "ember-autograd"), ("distributions", "nn", "ember-nn"),
])
def test_a_missing_component_names_its_folder_and_distribution(attr, folder, dist):
    """The ImportError gives the command that works from the source tree, and the index name."""
    message = ember._not_installed(f"ember.{attr}", dist)
    assert f"pip install ./packages/{folder} " in message
    assert f"pip install {dist})" in message
    if importlib.util.find_spec(f"ember.{attr}") is None:  # e.g. the core installed alone
        with pytest.raises(ImportError) as info:
            getattr(ember, attr)
        assert str(info.value) == message
