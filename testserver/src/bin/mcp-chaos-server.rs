//! `mcp-chaos-server`: the in-repo MCP test server with chaos tools, on stdin/stdout.
//! Flags: see [`mcp_testserver::cli`].

fn main() {
    std::process::exit(mcp_testserver::cli::main(
        mcp_testserver::ServerConfig::chaos(),
    ));
}
