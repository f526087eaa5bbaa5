//! The in-repo chaos MCP server on stdio (can delay, die, hang and send garbage on command).
fn main() {
    std::process::exit(mcp_testserver::cli::main(
        mcp_testserver::ServerConfig::chaos(),
    ));
}
