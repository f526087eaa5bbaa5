//! What the server sees: a frame the transport took is on the wire. The ghost counts
//! `notifications/initialized` per generation, the cancels sent, and pays what the server was
//! owed ([`crate::properties::wire`] judges each).

use serde_json::Value;

use crate::properties::{tasks, wire};
use crate::world::World;

/// A frame the transport took on `generation`: what the server now sees.
pub(crate) fn delivered(n: &mut World, generation: u64, frame: &[u8]) {
    let v: Value = serde_json::from_slice(frame).unwrap_or(Value::Null);
    let method = v.get("method").and_then(Value::as_str);
    match method {
        Some("notifications/initialized") => {
            let count = n.ghost.initialized.entry(generation).or_default();
            *count += 1;
            let count = *count;
            wire::initialized_delivered(n, count);
        }
        Some("notifications/cancelled") => {
            let id = v["params"]["requestId"].as_u64().unwrap_or(u64::MAX);
            wire::cancel_delivered(n, id);
            tasks::cancel_notified(n, id);
            n.ghost.cancel_owed.remove(&id);
        }
        Some(_) => {}
        None => {
            // A response to a server request.
            let id = match &v["id"] {
                Value::String(_) => -1,
                other => other.as_i64().unwrap_or(i64::MIN),
            };
            wire::response_delivered(n, generation, id);
        }
    }
}
