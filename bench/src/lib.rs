//! Benchmarks of the MCP client (see `src/bin/mcp_client_bench.rs` and `scripts/bench`).
