"""Sans-IO session core (private).  Sync only: must not import trio."""

from ._events import (
    CancelRequested as CancelRequested,
    Event as Event,
    NotificationReceived as NotificationReceived,
    Outgoing as Outgoing,
    PeerInitialized as PeerInitialized,
    ProgressReceived as ProgressReceived,
    ProtocolViolation as ProtocolViolation,
    RequestReceived as RequestReceived,
    ResponseReceived as ResponseReceived,
)
from ._lifecycle import State as State
from ._session import SessionCore as SessionCore
