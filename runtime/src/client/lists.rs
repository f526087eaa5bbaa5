//! A client's lists kept current ([`Client::live_lists`], see [`crate::LiveLists`]), and the
//! weak handle its background task holds so that it never keeps the connection alive.

use std::sync::{Arc, Weak};

use super::{Client, Shared};
use crate::live_lists::{LiveListOptions, LiveLists};

impl Client {
    /// This client's tools, prompts, resources and resource templates, fetched now if it is
    /// ready, and fetched again after each `list_changed` (debounced, rate-bounded) and each
    /// reconnect: see [`LiveLists`]. Each call starts one background task; take it once and
    /// clone the handle. It does not keep the client alive. Must be called inside a tokio
    /// runtime.
    pub fn live_lists(&self) -> LiveLists {
        self.live_lists_with(LiveListOptions::default())
    }

    /// [`Client::live_lists`] with its debounce, rate bound and lists chosen.
    pub fn live_lists_with(&self, options: LiveListOptions) -> LiveLists {
        LiveLists::start(self, options)
    }

    /// A handle that does not keep the client alive.
    pub(crate) fn downgrade(&self) -> WeakClient {
        WeakClient(Arc::downgrade(&self.shared))
    }
}

/// A [`Client`] held weakly: a task holding one does not keep the connection alive (the
/// connection stops once every [`Client`] is dropped).
#[derive(Clone)]
pub(crate) struct WeakClient(Weak<Shared>);

impl WeakClient {
    /// The client, if a handle of it is still alive.
    pub(crate) fn upgrade(&self) -> Option<Client> {
        self.0.upgrade().map(|shared| Client { shared })
    }
}
