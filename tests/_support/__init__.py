"""What the tests share: helpers imported by test modules of more than one area (a test module never
imports from another test module), and where things are (``paths``). Tooling that the benchmarks and
the fuzz campaigns use too is in ``tools/``."""
