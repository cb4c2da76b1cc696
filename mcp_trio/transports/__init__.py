"""Transports: move whole messages; know framing, not MCP."""

from ._base import Frame as Frame
from ._base import MessageChannel as MessageChannel
from .memory import MemoryChannel as MemoryChannel
from .memory import open_memory_transport_pair as open_memory_transport_pair
from .stdio import (
    DEFAULT_MAX_MESSAGE_SIZE as DEFAULT_MAX_MESSAGE_SIZE,
)
from .stdio import (
    StreamChannel as StreamChannel,
)
from .stdio import (
    open_stdio_client as open_stdio_client,
)
from .stdio import (
    open_stdio_server_channel as open_stdio_server_channel,
)
