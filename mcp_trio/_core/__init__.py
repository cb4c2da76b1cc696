"""Sans-IO session core (private).  Sync only: must not import trio."""

from ._events import (
    CancelRequested as CancelRequested,
)
from ._events import (
    Event as Event,
)
from ._events import (
    NotificationReceived as NotificationReceived,
)
from ._events import (
    Outgoing as Outgoing,
)
from ._events import (
    PeerInitialized as PeerInitialized,
)
from ._events import (
    ProgressReceived as ProgressReceived,
)
from ._events import (
    ProtocolViolation as ProtocolViolation,
)
from ._events import (
    RequestReceived as RequestReceived,
)
from ._events import (
    ResponseReceived as ResponseReceived,
)
from ._in_flight import progress_params as progress_params
from ._lifecycle import State as State
from ._session import SessionCore as SessionCore
