//! The in-repo echo MCP server on stdio, built here so integration tests can spawn it.
fn main() {
    std::process::exit(mcp_testserver::cli::main(
        mcp_testserver::ServerConfig::echo(),
    ));
}
