"""Tests of OAuth 2.1 authorization (client and server sides)."""
