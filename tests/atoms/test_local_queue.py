"""The embedded model serves one request at a time; a bounded number wait, the next is
refused with ModelBusy (a server's 503)."""

from __future__ import annotations

import asyncio

import pytest

from bigloop._errors import ModelBusy
from bigloop.atoms.models.local import LocalModel


def test_requests_queue_in_order_up_to_the_bound_and_the_next_is_refused() -> None:
    model = LocalModel(max_waiting=2)
    order: list[int] = []

    async def use(i: int, hold: asyncio.Event | None = None) -> None:
        async with model._turn():
            order.append(i)
            if hold is not None:
                await hold.wait()

    async def main() -> None:
        hold = asyncio.Event()
        first = asyncio.create_task(use(0, hold))
        await asyncio.sleep(0)
        waiting = [asyncio.create_task(use(i)) for i in (1, 2)]
        await asyncio.sleep(0)
        assert model.waiting == 2
        with pytest.raises(ModelBusy, match="2 requests are already waiting"):
            await use(3)
        hold.set()
        await asyncio.gather(first, *waiting)
        assert model.waiting == 0

    asyncio.run(main())
    assert order == [0, 1, 2]
