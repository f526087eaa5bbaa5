//! `classify`: the machine's inbound frame classifier and the machine itself.
//!
//! The whole input is one frame for `mcp_machine::classify::classify` (never a panic; a response
//! names an id that reads back from the frame; a server request's id round-trips to the JSON we
//! answer with). Then each line of the input is a frame from the server to a machine that is
//! ready with two calls in flight (no impossible row, no caller answered twice, sent frames are
//! JSON-RPC and answer only what the server asked, stop answers everyone): see `mcp_fuzz::frame`
//! and `mcp_fuzz::session`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    mcp_fuzz::frame::check(data);
    mcp_fuzz::session::run(data);
});
