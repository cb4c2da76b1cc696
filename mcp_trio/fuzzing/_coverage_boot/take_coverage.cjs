// Preloaded into a Node target by `mcp-trio fuzz --coverage node` (NODE_OPTIONS=--require):
// while NODE_V8_COVERAGE names a directory, V8 writes the block coverage of the process there
// at exit; this asks for it every MCP_TRIO_COVERAGE_EVERY_MS milliseconds (default 200) too, so
// that the fuzzer sees what each example reached while the process lives.  V8 resets its
// counters at each write: a file holds the blocks run since the one before.  The timer does not
// keep the process alive, and stdin, stdout and stderr are left alone.
"use strict";
if (process.env.NODE_V8_COVERAGE) {
  const v8 = require("node:v8");
  const every = Number(process.env.MCP_TRIO_COVERAGE_EVERY_MS) || 200;
  const timer = setInterval(() => {
    try {
      v8.takeCoverage();
    } catch (error) {
      clearInterval(timer);
    }
  }, every);
  timer.unref();
}
