//! `mcp-echo-server`: the well-behaved in-repo MCP test server on stdin/stdout.
//! Flags: see [`mcp_testserver::cli`].

fn main() {
    std::process::exit(mcp_testserver::cli::main(
        mcp_testserver::ServerConfig::echo(),
    ));
}
