"""Canary for the trio protocol the reader relay steps by hand (``_engine._compat_trio``): a
coroutine run through ``until_it_waits`` behaves as ``await`` would under the installed trio
(checkpoints, waits, cancellation, errors, context variables), and says whether it ever waited.
pyproject.toml bounds trio below its next minor release; raising the bound starts here."""

from __future__ import annotations

import contextvars

import pytest
import trio
import trio.testing

from mcp_trio._engine._compat_trio import until_it_waits

VAR: contextvars.ContextVar[str] = contextvars.ContextVar("VAR", default="outside")


async def test_a_coroutine_that_never_waits_runs_at_once_and_the_hook_is_not_called() -> None:
    calls: list[str] = []

    async def quick() -> int:
        return 42

    waited, result = await until_it_waits(quick(), contextvars.copy_context(), lambda: calls.append("hook"))
    assert (waited, result, calls) == (False, 42, [])


async def test_the_hook_runs_at_the_first_wait_and_trio_serves_every_wait_after_it(
    autojump_clock: trio.testing.MockClock,
) -> None:
    calls: list[str] = []
    event = trio.Event()

    async def waits() -> str:
        calls.append("started")
        await trio.lowlevel.checkpoint()
        calls.append("after checkpoint")
        await trio.sleep(5)
        await event.wait()
        return "done"

    async with trio.open_nursery() as nursery:
        nursery.start_soon(_set_later, event)
        start = trio.current_time()
        waited, result = await until_it_waits(
            waits(), contextvars.copy_context(), lambda: calls.append("hook")
        )
    assert (waited, result) == (True, "done")
    assert calls == ["started", "hook", "after checkpoint"]
    assert trio.current_time() - start == pytest.approx(10)


async def _set_later(event: trio.Event) -> None:
    await trio.sleep(10)
    event.set()


async def test_cancellation_reaches_the_coroutine_as_await_would_deliver_it() -> None:
    seen: list[str] = []

    async def sleeper() -> None:
        try:
            await trio.sleep_forever()
        except trio.Cancelled:
            seen.append("cancelled")
            raise

    with trio.move_on_after(0.01) as scope:
        await until_it_waits(sleeper(), contextvars.copy_context(), lambda: None)
    assert scope.cancelled_caught and seen == ["cancelled"]


async def test_errors_come_out_and_every_step_runs_in_the_context_given() -> None:
    context = contextvars.copy_context()
    context.run(VAR.set, "inside")

    async def failing() -> None:
        assert VAR.get() == "inside"
        await trio.lowlevel.checkpoint()
        assert VAR.get() == "inside"
        raise KeyError("x")

    with pytest.raises(KeyError):
        await until_it_waits(failing(), context, lambda: None)
    assert VAR.get() == "outside"
