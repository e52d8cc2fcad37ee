import numpy as np
import pytest

import ember


@pytest.fixture(autouse=True)
def _seed():
    ember.manual_seed(0)
    np.random.seed(0)
