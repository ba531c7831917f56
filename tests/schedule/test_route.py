from __future__ import annotations

import pytest

from bigloop import AtomCard, UserError
from bigloop.routing.route import Constraints, Weights, pareto_front, route

LOCAL = AtomCard(name="local", kind="model", privacy="local", cost=0.0, latency_s=3.0,
                 reliability=0.7)  # fmt: skip
CLOUD = AtomCard(name="cloud", kind="model", privacy="api.example.com", cost=0.01,
                 latency_s=0.8, reliability=0.95)  # fmt: skip
SLOW = AtomCard(name="slow", kind="model", privacy="local", cost=0.0, latency_s=9.0,
                reliability=0.6)  # fmt: skip


def test_private_data_never_goes_to_a_remote_atom() -> None:
    decision = route([CLOUD, LOCAL], Constraints(private=True))
    assert decision.order == ["local"]
    assert decision.rejected == {"cloud": "private data may not go to api.example.com"}


def test_weights_order_the_feasible_and_budgets_filter() -> None:
    assert route([LOCAL, CLOUD], weights=Weights(cost=10, latency=0, reliability=0)).order[0] == (
        "local"
    )
    assert route([LOCAL, CLOUD], weights=Weights(cost=0, latency=1, reliability=1)).order[0] == (
        "cloud"
    )
    assert route([LOCAL, CLOUD], Constraints(max_latency_s=1.0)).order == ["cloud"]
    with pytest.raises(UserError, match="No atom meets the routing constraints"):
        route([CLOUD], Constraints(private=True))


def test_pareto_front_drops_dominated_atoms() -> None:
    assert pareto_front([LOCAL, CLOUD, SLOW]) == ["local", "cloud"]
