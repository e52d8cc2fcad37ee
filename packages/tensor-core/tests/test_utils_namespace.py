"""ember.utils is a namespace of ember-tensor that other distributions add to (ember-data)."""

import importlib.util

import pytest

import ember


def test_utils_data_is_lazy_and_names_its_distribution():
    if importlib.util.find_spec("ember.utils.data") is not None:
        assert ember.utils.data.DataLoader.__name__ == "DataLoader"
    else:
        with pytest.raises(ImportError, match="pip install ember-data"):
            ember.utils.data  # noqa: B018
    with pytest.raises(AttributeError):
        ember.utils.no_such_thing  # noqa: B018
