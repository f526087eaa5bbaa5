//! What the transport tests share: starting a generation and reading its events.

#![allow(dead_code)]

pub mod traced;

use std::sync::Arc;
use std::time::Duration;

use mcp_runtime::transport::{
    self, Connector, TransportConfig, TransportError, TransportEvent, TransportHandle,
};
use tokio::sync::mpsc;
use tokio::time::timeout;

/// The events of the generations a test started.
pub type Events = mpsc::UnboundedReceiver<(u64, TransportEvent)>;

/// How long a test waits for any one event.
pub const WAIT: Duration = Duration::from_secs(5);

/// A small configuration: 64 KiB frames, a queue of 16.
pub fn small() -> TransportConfig {
    TransportConfig {
        max_frame_bytes: 64 * 1024,
        send_queue: 16,
    }
}

/// Spawns generation `generation` of `connector`.
pub fn start(
    connector: Arc<dyn Connector>,
    generation: u64,
    config: TransportConfig,
) -> (TransportHandle, Events) {
    let (tx, rx) = mpsc::unbounded_channel();
    (transport::spawn(connector, generation, config, tx), rx)
}

/// The next event, within [`WAIT`].
pub async fn next(rx: &mut Events) -> (u64, TransportEvent) {
    timeout(WAIT, rx.recv())
        .await
        .expect("no transport event within 5 s")
        .expect("event channel closed")
}

/// The next event is `Up`.
pub async fn expect_up(rx: &mut Events) {
    match next(rx).await {
        (_, TransportEvent::Up) => {}
        (_, other) => panic!("expected Up, got {other:?}"),
    }
}

/// The next event is a frame.
pub async fn expect_frame(rx: &mut Events) -> Vec<u8> {
    match next(rx).await {
        (_, TransportEvent::Frame(f)) => f,
        (_, other) => panic!("expected a frame, got {other:?}"),
    }
}

/// The next event is `Down`.
pub async fn expect_down(rx: &mut Events) -> TransportError {
    match next(rx).await {
        (_, TransportEvent::Down(e)) => e,
        (_, other) => panic!("expected Down, got {other:?}"),
    }
}
