"""The store contract (``mcp_trio.testing.check_store``, one check a test), on every store: in
memory (on a virtual clock) and on a real Redis (the ``kind`` parameter: its times to live are
short real times, Redis expires keys on its own clock)."""

from __future__ import annotations

from mcp_trio.testing import STORE_CHECKS, OpenPair


async def test_a_session_record_round_trips_between_workers(open_pair: OpenPair, store_time: object) -> None:
    await STORE_CHECKS["a_session_record_round_trips_between_workers"](open_pair)


async def test_changes_of_different_fields_by_two_workers_at_once_are_all_kept(
    open_pair: OpenPair, store_time: object
) -> None:
    await STORE_CHECKS["changes_of_different_fields_by_two_workers_at_once_are_all_kept"](open_pair)


async def test_a_change_computed_from_the_record_adds_without_losing_another(
    open_pair: OpenPair, store_time: object
) -> None:
    await STORE_CHECKS["a_change_computed_from_the_record_adds_without_losing_another"](open_pair)


async def test_take_forgets_the_record_and_returns_it(open_pair: OpenPair, store_time: object) -> None:
    await STORE_CHECKS["take_forgets_the_record_and_returns_it"](open_pair)


async def test_a_session_record_expires_unless_touched(open_pair: OpenPair, store_time: object) -> None:
    await STORE_CHECKS["a_session_record_expires_unless_touched"](open_pair)


async def test_put_replaces_and_delete_forgets(open_pair: OpenPair, store_time: object) -> None:
    await STORE_CHECKS["put_replaces_and_delete_forgets"](open_pair)


async def test_a_time_to_live_must_be_positive(open_pair: OpenPair, store_time: object) -> None:
    await STORE_CHECKS["a_time_to_live_must_be_positive"](open_pair)


async def test_events_resume_after_an_id_in_order_on_their_stream(
    open_pair: OpenPair, store_time: object
) -> None:
    await STORE_CHECKS["events_resume_after_an_id_in_order_on_their_stream"](open_pair)


async def test_events_are_bounded_by_count(open_pair: OpenPair, store_time: object) -> None:
    await STORE_CHECKS["events_are_bounded_by_count"](open_pair)


async def test_events_are_bounded_by_bytes(open_pair: OpenPair, store_time: object) -> None:
    await STORE_CHECKS["events_are_bounded_by_bytes"](open_pair)


async def test_tasks_are_created_read_updated_listed_and_deleted(
    open_pair: OpenPair, store_time: object
) -> None:
    await STORE_CHECKS["tasks_are_created_read_updated_listed_and_deleted"](open_pair)


async def test_a_task_expires_with_its_ttl(open_pair: OpenPair, store_time: object) -> None:
    await STORE_CHECKS["a_task_expires_with_its_ttl"](open_pair)


async def test_a_task_whose_lease_expires_is_reported_failed(open_pair: OpenPair, store_time: object) -> None:
    await STORE_CHECKS["a_task_whose_lease_expires_is_reported_failed"](open_pair)


async def test_a_task_without_a_lease_never_fails_by_itself(open_pair: OpenPair, store_time: object) -> None:
    await STORE_CHECKS["a_task_without_a_lease_never_fails_by_itself"](open_pair)


async def test_the_bus_delivers_between_workers_in_order(open_pair: OpenPair, store_time: object) -> None:
    await STORE_CHECKS["the_bus_delivers_between_workers_in_order"](open_pair)


async def test_two_subscriptions_of_one_channel_both_get_it_and_leaving_one_keeps_the_other(
    open_pair: OpenPair, store_time: object
) -> None:
    await STORE_CHECKS["two_subscriptions_of_a_channel_both_get_it_and_one_leaving_keeps_the_other"](
        open_pair
    )


async def test_a_subscription_that_falls_behind_is_cut_off(open_pair: OpenPair, store_time: object) -> None:
    await STORE_CHECKS["a_subscription_that_falls_behind_is_cut_off"](open_pair)


async def test_two_workers_taking_at_once_never_get_more_than_the_burst(
    open_pair: OpenPair, store_time: object
) -> None:
    await STORE_CHECKS["two_workers_taking_at_once_never_get_more_than_the_burst"](open_pair)


async def test_a_bucket_refills_at_its_rate(open_pair: OpenPair, store_time: object) -> None:
    await STORE_CHECKS["a_bucket_refills_at_its_rate"](open_pair)
