"""Attacks of the soak test through messages: large 2025-03-26 batches of slow calls sent back to
back, batches whose big answers fill the event store, a flood of bare ``initialize`` POSTs, and
batches in a 2025-11-25 session (a revision without batches).  Bounded in count and rate; every
request under a timeout; counts what was sent and what the server answered."""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable

import trio

from ._tally import Attack, Stats
from ._wire import (
    BATCHES,
    LATEST,
    Client,
    Failed,
    Pacer,
    Reply,
    call,
    encode,
    headers,
    initialize,
    new_session,
    rpc,
)

ERRORS = (Failed, OSError, trio.BrokenResourceError, trio.ClosedResourceError, ValueError)

SESSION_IDLE_TIMEOUT = 4.0  # the soak's --session-idle-timeout: the flood's sessions end after it
SESSIONS_PER_CLIENT = 128  # the shipped --max-sessions-per-client
BATCH_CALLS = 2000  # slow calls per batch
SLOW_MS = 200
BATCH_CONNECTIONS = 2  # batches in flight at once
BATCH_MAX = 16  # batches in all
BATCH_WAIT = 3.0  # seconds a batch's answer is waited for before its connection is dropped

STORE_CALLS, STORE_KB = 32, 32  # each batch answer: 32 x 32 KiB = 1 MiB, kept by the event store
STORE_RATE, STORE_MAX = 3.0, 45

INIT_RATE, INIT_MAX = 150.0, 2000

BATCH_1125_RATE, BATCH_1125_MAX = 10.0, 150


def _count_answers(s: Stats, reply: Reply) -> None:
    """Count the results and the errors (by code) in a batch answer."""
    for message in reply.messages():
        if "result" in message:
            s.add("calls answered with a result")
        else:
            s.add(f"calls answered error {message.get('error', {}).get('code')}")


async def _batch_sender(port: int, s: Stats, session: str, first: int) -> None:
    ident = first
    while s.counts["batches sent"] < BATCH_MAX:
        body = encode([call(ident + n, "sleep", ms=SLOW_MS) for n in range(BATCH_CALLS)])
        ident += BATCH_CALLS * BATCH_CONNECTIONS
        client: Client | None = None
        try:
            client = await Client.open(s.source, port, timeout=3.0)
            started = trio.current_time()
            s.add("batches sent")
            reply = await client.request("POST", headers(session, BATCHES), body, timeout=BATCH_WAIT)
            s.add(f"batch answered {reply.status}")
            if trio.current_time() - started > 1.0:
                s.add("batch answered after over 1 s")
            _count_answers(s, reply)
        except Failed as exc:
            s.add(
                "batch dropped unanswered after 3 s" if "within" in str(exc) else f"failed: {str(exc)[:50]}"
            )
        except ERRORS as exc:
            s.add(f"failed: {type(exc).__name__}")
        finally:
            if client is not None:
                client.close()
        await trio.sleep(0.25)


async def batch_flood(port: int, s: Stats) -> None:
    session = await new_session(s.source, port, BATCHES)
    async with trio.open_nursery() as nursery:
        for n in range(BATCH_CONNECTIONS):
            nursery.start_soon(_batch_sender, port, s, session, 1 + n * BATCH_CALLS)


async def _paced(
    port: int, s: Stats, pacer: Pacer, most: int, step: Callable[[Client, int], Awaitable[None]]
) -> None:
    """``step(client, n)`` for n = 1, 2 ... as ``pacer`` allows, until ``most`` were sent, on one
    keep-alive connection, opened again whenever the server closes it."""
    client: Client | None = None
    n = 0
    try:
        while s.counts["sent"] < most:
            await pacer.wait()
            n += 1
            try:
                if client is None or not client.usable:
                    client = await Client.open(s.source, port, timeout=3.0)
                s.add("sent")
                await step(client, n)
            except ERRORS as exc:
                s.add(f"failed: {str(exc)[:50]}")
    finally:
        if client is not None:
            client.close()


async def event_store(port: int, s: Stats) -> None:
    session = await new_session(s.source, port, BATCHES)

    async def step(client: Client, n: int) -> None:
        first = n * STORE_CALLS
        body = encode([call(first + k, "blob", kb=STORE_KB) for k in range(STORE_CALLS)])
        reply = await client.request("POST", headers(session, BATCHES), body, timeout=5.0)
        s.add(f"answered {reply.status}")
        s.add("answer MiB", len(reply.body) >> 20)

    await _paced(port, s, Pacer(STORE_RATE), STORE_MAX, step)


async def init_flood(port: int, s: Stats) -> None:
    body = initialize(LATEST, "flood")
    alive: deque[float] = deque()  # when each session the server may still hold was opened

    async def step(client: Client, n: int) -> None:
        reply = await client.request("POST", headers(), body, timeout=3.0)
        s.add(f"answered {reply.status}")
        if reply.status == 200:
            now = trio.current_time()
            alive.append(now)
            while alive[0] < now - SESSION_IDLE_TIMEOUT:  # (idle sessions end: not held)
                alive.popleft()
            s.held_max = max(s.held_max, len(alive))

    pacer = Pacer(INIT_RATE)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_paced, port, s, pacer, INIT_MAX, step)
        nursery.start_soon(_paced, port, s, pacer, INIT_MAX, step)


async def batch_in_2025_11_25(port: int, s: Stats) -> None:
    session = await new_session(s.source, port, LATEST)

    async def step(client: Client, n: int) -> None:
        batch = encode([rpc(f"b{n}", "ping"), rpc(f"c{n}", "ping")])
        reply = await client.request("POST", headers(session, LATEST), batch, timeout=3.0)
        s.add(f"batch answered {reply.status}")
        if n % 10 == 0:
            ping = encode(rpc(n, "ping"))
            reply = await client.request("POST", headers(session, LATEST), ping, timeout=3.0)
            s.add(f"ping after batches answered {reply.status}")

    await _paced(port, s, Pacer(BATCH_1125_RATE), BATCH_1125_MAX, step)


def _none_refused(what: str, knobs: str, per_send: int = 1) -> Callable[[Stats], str | None]:
    """The verdict of an attack the server should refuse in part: an error status, or calls
    answered with an error."""

    def unbounded(s: Stats) -> str | None:
        answered = 0
        for key, count in s.counts.items():
            status = key.rpartition("answered ")[2]
            if count and (key.startswith("calls answered error") or status[:1] in ("4", "5")):
                return None
            answered += count if "answered" in key and "unanswered" not in key else 0
        if not answered:
            # Nothing came back in the attacker's patience (a bounded batch's reply waits for
            # its queued calls): no evidence either way, the dedicated tests decide.
            return None
        sent = s.counts["batches sent"] + s.counts["sent"]
        return f"all {sent * per_send} {what}, none refused ({knobs})"

    return unbounded


def _init_unbounded(s: Stats) -> str | None:
    verdict = _none_refused("sessions opened for one address", "--max-sessions-per-client")(s)
    if verdict is not None and s.held_max <= SESSIONS_PER_CLIENT:
        # Never more sessions alive at once than the bound allows (an attacker slowed down by
        # a busy machine): no evidence either way, tests/transports decide.
        return None
    return verdict


def _batch_1125_unbounded(s: Stats) -> str | None:
    wrong = sorted(
        key
        for key in s.counts
        if key.startswith("failed")
        or key.startswith("batch answered")
        and key != "batch answered 400"
        or key.startswith("ping after batches")
        and not key.endswith(" 200")
    )
    if not wrong:
        return None
    found = ", ".join(wrong)
    return f"batches in a revision without batches: {found} (400 at once, the session going on)"


ATTACKS = [
    Attack(
        "batch_flood",
        f"2025-03-26 batches of {BATCH_CALLS} slow calls ({SLOW_MS} ms) back to back, "
        f"{BATCH_CONNECTIONS} at once, each dropped if unanswered after {BATCH_WAIT:.0f} s",
        batch_flood,
        lambda s: s.counts["batches sent"] >= 2,
        _none_refused("slow calls queued", "--max-queued / --max-queued-total", BATCH_CALLS),
    ),
    Attack(
        "event_store",
        f"2025-03-26 batches of {STORE_CALLS} calls answering {STORE_KB} KiB each "
        f"(1 MiB per answer, {STORE_RATE:.0f}/s)",
        event_store,
        lambda s: s.counts["sent"] >= 2,
        lambda s: None,  # seen only in the server's memory: the RSS peak and the settle
    ),
    Attack(
        "init_flood",
        f"bare initialize POSTs on 2 keep-alive connections ({INIT_RATE:.0f}/s, {INIT_MAX} at most)",
        init_flood,
        lambda s: s.counts["sent"] >= 100,
        _init_unbounded,
    ),
    Attack(
        "batch_2025_11_25",
        f"batches of two pings in a 2025-11-25 session ({BATCH_1125_RATE:.0f}/s), "
        "and a ping after every 10th",
        batch_in_2025_11_25,
        lambda s: s.counts["sent"] >= 10,
        _batch_1125_unbounded,
    ),
]
