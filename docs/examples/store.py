"""The store the workers of a server share: a session record, the events of a resumable stream, a
task with a lease, a rate limit's bucket and the bus. In memory by default; set MCP_TRIO_STORE to
a Redis URL (for example redis://127.0.0.1:6379/0) to run the same on Redis."""

import os

import trio

from mcp_trio.store import SessionRecord, TaskRecord, open_store

URL = os.environ.get("MCP_TRIO_STORE")  # None: in memory


async def main() -> None:
    async with open_store(URL, prefix="example:") as store:
        # a session record, kept for a time to live (seconds) that each request extends
        record = SessionRecord(session_id="s1", protocol_version="2025-11-25", log_level="info")
        await store.sessions.put(record, ttl=600)
        await store.sessions.touch("s1", ttl=600)
        found = await store.sessions.get("s1")
        assert found is not None
        print("session:", found.session_id, found.protocol_version, found.log_level)

        # the events of a stream, for a client that reconnects with Last-Event-ID
        for n in range(1, 4):
            await store.events.store("s1", "get", f"e{n}", f"event {n}".encode())
        print("after e1:", await store.events.replay_after("s1", "e1"))

        # a rate limit's bucket (2 requests, then 10 a second), one for all the workers
        assert store.buckets is not None
        waits = [await store.buckets.take("client-1", rate=10, burst=2) for _ in range(3)]
        print("bucket:", ", ".join("taken" if wait == 0 else f"retry in {wait:.1f} s" for wait in waits))

        # a task whose worker renews its lease; one whose worker is gone is reported failed
        await store.tasks.create(TaskRecord(task_id="t1", owner="alice", ttl=60), lease=2)
        await store.tasks.create(TaskRecord(task_id="t2", owner="alice", ttl=60), lease=0.1)
        for _ in range(3):
            await trio.sleep(0.1)
            await store.tasks.renew("t1", 2)  # seconds from now
        for task in await store.tasks.list("alice"):
            why = f" ({task.status_message})" if task.status_message else ""
            print(f"task: {task.task_id} {task.status}{why}")

        # the bus: what one worker publishes reaches every subscription of the channel
        async with store.bus.subscribe("worker-2") as inbox:
            await store.bus.publish("worker-2", b"a response for your handler")
            print("bus:", await inbox.receive())

        # the session ends: nothing of it is left behind
        for task_id in ("t1", "t2"):
            await store.tasks.delete(task_id)
        await store.events.forget("s1")
        await store.sessions.delete("s1")
        print("left:", await store.sessions.get("s1"), await store.tasks.list("alice"))


trio.run(main)
