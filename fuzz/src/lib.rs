//! What the fuzz targets in `fuzz_targets/` run: each module checks one part of the client
//! against arbitrary input and panics (the fuzzer's crash) when an invariant breaks. The targets
//! themselves only pass the fuzzer's bytes here.

pub mod auth;
pub mod frame;
pub mod headers;
pub mod lines;
pub mod session;
pub mod spec;
pub mod sse;
