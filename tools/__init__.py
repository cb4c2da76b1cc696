"""Tooling of the repository that the tests, the benchmarks and the fuzz campaigns share: the official
conformance suite's runner (``conformance/``), Debian's services (``debian``), a real redis-server
(``redis_server``) and a round-robin proxy (``rrproxy``). Not part of the library: it is not installed."""
