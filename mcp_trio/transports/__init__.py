"""Transports: move whole messages; know framing, not MCP."""

from ._base import Frame as Frame, MessageChannel as MessageChannel
from .memory import MemoryChannel as MemoryChannel, open_memory_transport_pair as open_memory_transport_pair
from .stdio import (
    DEFAULT_MAX_MESSAGE_SIZE as DEFAULT_MAX_MESSAGE_SIZE,
    StreamChannel as StreamChannel,
    open_stdio_client as open_stdio_client,
    open_stdio_server_channel as open_stdio_server_channel,
)
