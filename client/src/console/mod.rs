//! The web console: a small server-rendered site on the client's own listener
//! — 状态 Status (`/`, live by server-sent events on `/events`), 设置 Settings
//! (`/settings`), 历史 History (`/history`) — and `GET /metrics` (Prometheus) and
//! `GET /healthz`.
//!
//! One file per page: each has `fn routes() -> Router<ConsoleState>`, merged in
//! [`router`]; the pages are askama templates in `client/templates/console/` (one
//! escape, at render); [`layout`] renders them and serves the static CSS and JS (no
//! inline script); [`view`] holds what the templates share (times in the host's zone,
//! reasons, step names, the shell). [`screens`] serves each phone's live screenshot from
//! its [`shot`] cache. The
//! state ([`ConsoleState`]) holds the workers ([`ConsoleWorker`]: label, store, progress
//! board, the phone to screenshot, what the configuration says about going live — `run`
//! passes one per phone).
//!
//! **Loopback only** unless a password is set (safety). Several clients
//! may run on one host (one per phone), so the default is the first free port of
//! [`DEFAULT_PORTS`] (9464 is the port commonly used by Prometheus exporters), and a port
//! that is taken never stops the run: the client logs it and runs without a console.

pub mod actions;
pub mod auth;
pub mod auth_routes;
pub mod guard;
pub mod history;
pub mod layout;
pub mod listen;
pub mod metrics;
pub mod router;
pub mod screens;
pub mod settings;
pub mod shot;
pub mod state;
pub mod status;
pub mod view;

#[cfg(test)]
mod farm_tests;
#[cfg(test)]
mod router_tests;

pub use listen::{bind, ConsoleAddr, DEFAULT_PORTS};
pub use metrics::render;
pub use router::{router, serve};
pub use shot::PhoneScreen;
pub use state::{ConfigLive, ConsoleState, ConsoleWorker, WebhookName};
