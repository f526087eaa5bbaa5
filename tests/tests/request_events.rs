//! The runtime's `mcp::request` events: a span per call carrying its method, a `request`
//! event when the driver takes it and a `request done` event with its outcome, only while a
//! subscriber wants them (a call in flight keeps no span otherwise).

use std::io::Write;
use std::sync::{Arc, Mutex};

use mcp_tests::in_process;
use mcp_testserver::ServerConfig;
use serde_json::json;

/// Everything the subscriber wrote.
#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl Write for Buffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Buffer {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

/// Runs a successful call and a failing one on a current-thread runtime (the driver on the
/// same thread, under a subscriber at `level`), and returns what the subscriber wrote.
fn captured(level: tracing::Level) -> String {
    let buffer = Buffer::default();
    let writer = buffer.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(level)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    tracing::subscriber::with_default(subscriber, || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let client = in_process(ServerConfig::echo()).connect().await.unwrap();
            let ok = client
                .call_tool("echo", json!({"message": "traced"}))
                .await
                .unwrap();
            assert!(!ok.failed());
            let err = client.request("no/such/method", None).await;
            assert!(err.is_err(), "{err:?}");
            client.stop().await;
        });
    });
    buffer.text()
}

#[test]
fn each_call_has_a_span_with_its_method_and_a_done_event_with_its_outcome() {
    let text = captured(tracing::Level::DEBUG);
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("mcp.request{"))
        .collect();
    let call = |method: &str, what: &str| {
        lines
            .iter()
            .any(|l| l.contains(&format!("method={method}")) && l.contains(what))
    };
    assert!(call("tools/call", "request done"), "{text}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("method=tools/call") && l.contains("outcome=\"ok\"")),
        "{text}"
    );
    assert!(call("no/such/method", "request done"), "{text}");
    assert!(
        lines.iter().any(|l| l.contains("method=no/such/method")
            && !l.contains("outcome=\"ok\"")
            && l.contains("request done")),
        "{text}"
    );
}

#[test]
fn no_request_events_below_their_level() {
    let text = captured(tracing::Level::INFO);
    assert!(!text.contains("mcp.request"), "{text}");
    assert!(!text.contains("request done"), "{text}");
}
