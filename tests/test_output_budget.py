"""The output budget (``mcp_ref.layers.outputbudget``) and ``RequestContext.reserve_output``: large answers
reserve their bytes before they are made and hold them until their line has left the process."""

from __future__ import annotations

import asyncio
import os
from typing import Any, Callable

import pytest

from mcp_ref import Server
from mcp_ref.layers.outputbudget import OutputBudget
from mcp_ref.core.stdout import _Output
from mcp_ref.core.streams import PolledWriter
from tests.memory import serve


async def _granted(budget: OutputBudget, nbytes: int, **kwargs: Any) -> asyncio.Task[None]:
    task = asyncio.ensure_future(budget.acquire(nbytes, **kwargs))
    for _ in range(3):
        await asyncio.sleep(0)
    return task


@pytest.mark.req("STDIO-OUTPUT-RESERVED")
async def test_a_reservation_waits_while_others_hold_the_budget_and_goes_in_arrival_order() -> None:
    budget = OutputBudget(100)
    await budget.acquire(60)
    big, small = await _granted(budget, 50), await _granted(budget, 10)
    assert not big.done() and not small.done()  # 10 would fit, but the 50 came first
    budget.release(60)
    await asyncio.sleep(0)
    assert big.done() and small.done() and budget.reserved == 60


@pytest.mark.req("STDIO-OUTPUT-RESERVED")
async def test_one_reservation_larger_than_the_whole_budget_goes_alone() -> None:
    budget = OutputBudget(100)
    await budget.acquire(500)
    follower = await _granted(budget, 1)
    assert budget.reserved == 500 and not follower.done()
    budget.release(500)
    await asyncio.sleep(0)
    assert follower.done() and budget.reserved == 1


@pytest.mark.req("STDIO-OUTPUT-RESERVED")
async def test_a_cancelled_waiter_lets_the_ones_behind_it_in_and_a_request_holding_bytes_never_waits() -> None:
    budget = OutputBudget(100)
    await budget.acquire(60)
    big, small = await _granted(budget, 50), await _granted(budget, 10)
    big.cancel()
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert small.done() and not small.cancelled() and budget.reserved == 70 and budget.waiting == 0
    await budget.acquire(1000, now=True)  # a request holding a reservation already
    assert budget.reserved == 1070


@pytest.mark.req("STDIO-OUTPUT-RESERVED")
async def test_a_waiter_cancelled_just_as_it_was_granted_gives_its_bytes_back() -> None:
    budget = OutputBudget(100)
    await budget.acquire(100)
    waiter = await _granted(budget, 40)
    budget.release(100)  # grants the waiter (its future is done) ...
    waiter.cancel()  # ... which is cancelled before it runs again
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert budget.reserved == 0


@pytest.mark.req("STDIO-OUTPUT-RESERVED")
def test_the_budget_must_be_a_positive_number_of_bytes() -> None:
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError):
            OutputBudget(bad)  # type: ignore[arg-type]


class LeavesLater:
    """``when_written`` of a sink whose lines leave only when the test says so, as from a full pipe."""

    def __init__(self) -> None:
        self.callbacks: list[Callable[[], None]] = []

    def __call__(self, callback: Callable[[], None]) -> None:
        self.callbacks.append(callback)

    def leave(self) -> None:
        callbacks, self.callbacks = self.callbacks, []
        for callback in callbacks:
            callback()


@pytest.mark.req("STDIO-OUTPUT-RESERVED")
async def test_a_reserved_answer_holds_its_bytes_until_its_line_has_left() -> None:
    server = Server("budget", "1.0")
    started: list[int] = []

    @server.tool(input_schema={"type": "object", "properties": {"n": {"type": "integer"}}})
    async def big(ctx: Any, args: dict[str, Any]) -> str:
        await ctx.reserve_output(args["n"])
        started.append(args["n"])
        return "x" * 10

    sink = LeavesLater()
    async with serve(server) as client:
        client.sink.when_written = sink  # type: ignore[attr-defined]
        budget = client.dispatcher.output_budget = OutputBudget(100)
        first = client.request("tools/call", {"name": "big", "arguments": {"n": 80}})
        answer = await client.response(first)
        assert answer["result"]["content"][0]["text"] == "x" * 10, answer
        assert budget.reserved == 80  # answered, but its line has not left
        second = client.request("tools/call", {"name": "big", "arguments": {"n": 80}})
        for _ in range(5):
            await asyncio.sleep(0)
        assert started == [80] and budget.waiting == 1  # the second waits for the first's bytes
        sink.leave()
        await client.response(second)
        assert started == [80, 80]
        sink.leave()
        assert budget.reserved == 0


@pytest.mark.req("STDIO-OUTPUT-RESERVED")
async def test_a_cancelled_request_gives_back_its_reservation() -> None:
    server = Server("budget", "1.0")
    holding = asyncio.Event()

    @server.tool()
    async def hold(ctx: Any, args: dict[str, Any]) -> str:
        await ctx.reserve_output(1000)
        holding.set()
        await asyncio.sleep(3600)
        return "never"

    async with serve(server) as client:
        request = client.request("tools/call", {"name": "hold", "arguments": {}})
        await asyncio.wait_for(holding.wait(), 2)
        assert client.dispatcher.output_budget.reserved == 1000
        client.cancel(request)
        await client.settle()
        assert client.dispatcher.output_budget.reserved == 0


@pytest.mark.req("STDIO-OUTPUT-RESERVED")
async def test_the_stdio_output_calls_back_once_a_line_has_left_the_pipe() -> None:
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)
    output = _Output(PolledWriter(write_end), on_lost=lambda exc: None, on_room=lambda: None)
    output.open(asyncio.get_running_loop())
    try:
        left: list[str] = []
        output.when_written(lambda: left.append("nothing queued"))
        assert left == ["nothing queued"]
        output.write(b"x" * (1024 * 1024) + b"\n")  # more than the pipe holds
        output.when_written(lambda: left.append("line"))
        for _ in range(3):
            await asyncio.sleep(0)
        assert left == ["nothing queued"] and output.buffered > 0
        taken = 0
        while taken < 1024 * 1024 + 1:
            await asyncio.sleep(0)
            try:
                taken += len(os.read(read_end, 1 << 20))
            except BlockingIOError:
                pass
        for _ in range(5):
            await asyncio.sleep(0)
        assert left == ["nothing queued", "line"]
    finally:
        await output.close()
        os.close(read_end)
