//! Authorization for remote MCP servers (OAuth 2.1, the MCP specification's Authorization
//! part): reading a server's `Bearer` challenge ([`challenge`]), finding the metadata of the
//! protected resource and of its authorization server ([`discovery`]), and keeping
//! registrations and tokens ([`store`]), and the authorization itself ([`flow`]).
//!
//! Not here: the decisions of a connection that meets a 401 or a 403 (they are rows of
//! `spec/auth.toml`).

pub mod challenge;
pub mod discovery;
pub mod flow;
pub mod loopback;
pub mod policy;
pub mod store;

pub use challenge::Challenge;
pub use discovery::{ResourceMetadata, ServerMetadata};
pub use flow::{AuthError, AuthRequest, HeadlessUserAgent, OAuth, OAuthBuilder, UserAgent};
pub use loopback::LoopbackUserAgent;
pub use policy::{AddressClass, UrlRule};
/// The URL type of this module's API (`reqwest`'s, the `url` crate's).
pub use reqwest::Url;
pub use store::{ClientCredentials, FileStore, MemoryStore, Secret, Token, TokenStore};
